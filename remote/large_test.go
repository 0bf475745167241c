package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestLargeStreamedResult: a tool that streams a result larger than one NATS
// message in many small deltas gives the agent all of it. The worker sends
// the deltas faster than the agent's engine emits them; the caller lost those
// more than 256 frames behind, and then, the result frame leaving the
// content out, failed the call ("some of its pieces were lost").
func TestLargeStreamedResult(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	const n = 1280 // 1.25 MiB in 1 KiB deltas
	chunk := strings.Repeat("x", 1023) + "\n"
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "dump", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for range n {
			if err := em.Text(chunk); err != nil {
				return "", err
			}
		}
		return "", nil
	}))
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "dump", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != strings.Repeat(chunk, n) {
		t.Fatalf("%s, %d bytes, %v", r.State, len(r.Text()), r.Err)
	}
}

// TestShortHeartbeat: a client asking for heartbeats more often than a
// worker sends them (10 ms at most) still waits for them: before, its
// LostAfter was computed from the interval asked for (2 ms × 5), no longer
// than the worker's 10 ms, and every call longer than that failed with
// *LostError although the worker was alive.
func TestShortHeartbeat(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "slow", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-time.After(150 * time.Millisecond):
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus), remote.WithHeartbeat(2*time.Millisecond, 5))
	if remote.LostAfter(c) < 5*10*time.Millisecond {
		t.Errorf("LostAfter %v: less than 5 of the worker's shortest heartbeats (10 ms)", remote.LostAfter(c))
	}
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "slow", `{}`))[0]
	if r.State != events.StateSuccess || r.Text() != "done" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

type bigOut struct {
	Data string `json:"data"`
}

// TestLargeResultAtOnce: a result larger than one NATS message that a tool
// returns at once, not streamed, reaches the agent whole and as in process:
// a long text (cut into several text deltas on the way), a structured
// output (its JSON part cut into chunks, put together again), a result
// whose meta or error text is too large even without its content (the meta
// left out and said so, the error cut and said so), and a progress report
// too large for a message (it goes without its data, and leaves no gap
// that would lose a streamed result). Before, the first two failed with
// "larger than one NATS message and some of its pieces were lost", the
// next two found no result
// frame at all and gave the worker up as lost ("stopped answering ... may
// or may not have done its work") though it was alive, and the last failed
// like the first two.
func TestLargeResultAtOnce(t *testing.T) {
	// A server that takes messages of 64 KiB at most, and 96 KiB of text
	// with characters that take more room escaped.
	srv := smallServer(t, 64<<10)
	big := strings.Repeat("héllo <wörld> \"quoted\"\n", 96<<10/26)
	line := strings.Repeat("z", 1023) + "\n"
	tools := []*toolkit.Tool{
		toolkit.MustTool(toolkit.Spec{Name: "text", ReadOnly: true}, func(context.Context, struct{}) (string, error) {
			return big, nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "structured", ReadOnly: true}, func(context.Context, struct{}) (bigOut, error) {
			return bigOut{Data: big}, nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "meta", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
			stream.From(ctx).SetMeta("big", big)
			return "ok", nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "error", ReadOnly: true}, func(context.Context, struct{}) (string, error) {
			return "", errors.New(big)
		}),
		toolkit.MustTool(toolkit.Spec{Name: "progress", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
			em := stream.From(ctx)
			em.Report("a report too large", 0.5, map[string]string{"big": big})
			for range 100 {
				if err := em.Text(line); err != nil {
					return "", err
				}
			}
			return "", nil
		}),
	}
	wk := testutil.Kit(t)
	testutil.Add(t, wk, tools...)
	w, err := remote.Serve(connTo(t, srv), wk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	c := remote.NewClient(connTo(t, srv))
	rec := &testutil.Recorder{}
	agent := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, agent, discover(t, c, len(tools))...)
	local := testutil.Kit(t)
	testutil.Add(t, local, tools...)
	for _, tl := range tools {
		name := tl.Name()
		t.Run(name, func(t *testing.T) {
			r := testutil.Run(t, agent, "s", testutil.Call(name, name, `{}`))[0]
			if isLost(r.Err) {
				t.Fatalf("the worker was given up as lost: %v", r.Err)
			}
			if d := testutil.Deltas(rec.Of(name)); !events.EqualContent(d, r.Content) {
				t.Errorf("the deltas (%d parts) do not add up to the result (%d parts)", len(d), len(r.Content))
			}
			if name == "progress" {
				reports := 0
				for _, ev := range rec.Of(name) {
					if ev.Type == events.TypeProgress && ev.Progress.Message == "a report too large" && len(ev.Progress.Data) == 0 {
						reports++
					}
				}
				if reports != 1 {
					t.Errorf("%d progress reports without their data, want the one too large, sent without its data", reports)
				}
			}
			switch name {
			case "meta":
				if r.State != events.StateSuccess || r.Text() != "ok" || r.Meta[remote.MetaOmitted] != true || r.Meta["big"] != nil {
					t.Fatalf("%s %q %v, meta %v", r.State, r.Text(), r.Err, r.Meta[remote.MetaOmitted])
				}
				return
			case "error":
				want := fmt.Sprintf(" [cut to fit one message: %d bytes in all]", len(big))
				if r.State != events.StateError || r.Err == nil || !strings.HasSuffix(r.Err.Error(), want) ||
					!strings.HasPrefix(r.Err.Error(), big[:1000]) {
					t.Fatalf("%s: %.200v", r.State, r.Err)
				}
				return
			}
			want := testutil.Run(t, local, "s", testutil.Call(name, name, `{}`))[0]
			if r.State != events.StateSuccess || !events.EqualContent(r.Content, want.Content) {
				t.Fatalf("%s, %d bytes, %.200v; in process %d bytes", r.State, len(r.Text()), r.Err, len(want.Text()))
			}
		})
	}
}

// smallServer starts a NATS server, closed at the end of the test, that
// takes messages of maxPayload bytes at most.
func smallServer(t *testing.T, maxPayload int32) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{MaxPayload: maxPayload, DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

// connTo connects to srv in process; closed at the end of the test.
func connTo(t *testing.T, srv *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestSlowAgentIsNotSilentWorker: the time the agent takes to handle a
// frame (its engine, its inline observers: here 60 ms per delta, three of
// the client's heartbeat bounds) is not the worker's silence. The worker
// sends its heartbeats meanwhile; before, the client's timer fired during
// the handling and, the next frame and the timer both ready, the call
// failed with *LostError one time in two for each delta though the
// worker never stopped answering.
func TestSlowAgentIsNotSilentWorker(t *testing.T) {
	bus := natstest.Bus(t)
	wk := testutil.Kit(t)
	const n = 8
	testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: "chatty", ReadOnly: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		for i := range n {
			if err := em.Text(fmt.Sprintf("line %d\n", i)); err != nil {
				return "", err
			}
		}
		return "", nil
	}))
	serve(t, bus, wk)
	c := remote.NewClient(conn(t, bus), remote.WithHeartbeat(10*time.Millisecond, 2))
	slow := toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == events.TypeDelta {
			time.Sleep(60 * time.Millisecond) // an inline observer that takes its time
		}
	})
	agent := testutil.Kit(t, toolkit.WithInlineObserver(slow))
	testutil.Add(t, agent, discover(t, c, 1)...)
	r := testutil.Run(t, agent, "s", testutil.Call("c1", "chatty", `{}`))[0]
	if r.State != events.StateSuccess || strings.Count(r.Text(), "\n") != n {
		t.Fatalf("%s %q %v", r.State, r.Text(), r.Err)
	}
}

// TestSmallMaxPayload: on a server that takes messages of 4 KiB at most, a
// result that fits in one message goes in one delta frame, and a larger one
// in pieces: a frame keeps room for its headers in proportion, not a fixed
// 4 KiB that left nothing for the body.
func TestSmallMaxPayload(t *testing.T) {
	srv := smallServer(t, 4<<10)
	wk := testutil.Kit(t)
	for _, n := range []int{3000, 10000} {
		text := strings.Repeat("y", n)
		testutil.Add(t, wk, toolkit.MustTool(toolkit.Spec{Name: fmt.Sprint("t", n), ReadOnly: true}, func(context.Context, struct{}) (string, error) {
			return text, nil
		}))
	}
	w, err := remote.Serve(connTo(t, srv), wk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	c := remote.NewClient(connTo(t, srv))
	agent := testutil.Kit(t)
	testutil.Add(t, agent, discover(t, c, 2)...)
	for _, n := range []int{3000, 10000} {
		r := testutil.Run(t, agent, "s", testutil.Call(fmt.Sprint("c", n), fmt.Sprint("t", n), `{}`))[0]
		if r.State != events.StateSuccess || r.Text() != strings.Repeat("y", n) {
			t.Fatalf("%d bytes: %s, %d bytes, %v", n, r.State, len(r.Text()), r.Err)
		}
	}
}
