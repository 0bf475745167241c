package stream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// TestEmitterFromManyGoroutinesOnNATS: a tool writes deltas and progress
// from several goroutines at once, and some of them go on writing after the
// tool returned. On NATS, each call's events are numbered 1..n in order,
// start first and result last; no delta or progress comes after the result;
// the result is exactly the deltas before it; and every late write was
// refused with ErrCallFinished.
func TestEmitterFromManyGoroutinesOnNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	defer tk.Close(context.Background())
	const writers, each = 6, 100
	var lateMu sync.Mutex
	var late []error
	var lateWG sync.WaitGroup
	release := make(chan struct{})
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "many", ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
		em := stream.From(ctx)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			lateWG.Add(1)
			go func() {
				defer lateWG.Done()
				for i := range each {
					em.Progress(fmt.Sprintf("w%d %d", w, i), float64(i)/each)
					if err := em.Text(fmt.Sprintf("<%d.%d>", w, i)); err != nil {
						t.Errorf("a write during the call: %v", err)
					}
				}
				wg.Done()
				<-release // the batch has returned: both calls are finished
				for range 50 {
					em.Progress("late", 1)
					err := em.Text("LATE")
					lateMu.Lock()
					late = append(late, err)
					lateMu.Unlock()
				}
			}()
		}
		wg.Wait()
		return "end", nil
	}))
	var mu sync.Mutex
	byCall := map[string][]*events.Event{}
	results := make(chan struct{}, 16)
	sub, err := bus.Subscribe(bus.Subjects().Session("many"), func(ev *events.Event) {
		mu.Lock()
		byCall[ev.Call] = append(byCall[ev.Call], ev)
		mu.Unlock()
		if ev.Type == events.TypeResult {
			results <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()
	sess, _ := tk.Session("many")
	rs := sess.Run(context.Background(), []toolkit.Call{{ID: "a", Name: "many"}, {ID: "b", Name: "many"}})
	close(release)
	lateWG.Wait()
	for range rs {
		select {
		case <-results:
		case <-time.After(20 * time.Second):
			t.Fatal("results did not arrive")
		}
	}
	// Anything published after the results would arrive now.
	bus.Publisher().Flush(context.Background())
	bus.Conn().Flush()
	time.Sleep(50 * time.Millisecond)
	for _, err := range late {
		if !errors.Is(err, stream.ErrCallFinished) {
			t.Fatalf("a write after the call ended: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range rs {
		evs := byCall[r.Call.ID]
		var rebuilt events.Reassembler
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: event %d has seq %d", r.Call.ID, i, ev.Seq)
			}
			switch {
			case i == 0 && ev.Type != events.TypeStart, i == len(evs)-1 && ev.Type != events.TypeResult,
				i > 0 && i < len(evs)-1 && (ev.Type == events.TypeStart || ev.Type == events.TypeResult):
				t.Fatalf("%s: event %d is %s", r.Call.ID, i, ev.Type)
			}
			if ev.Type == events.TypeProgress && ev.Progress.Message == "late" {
				t.Fatalf("%s: late progress published", r.Call.ID)
			}
			if err := rebuilt.Add(ev); err != nil {
				t.Fatalf("%s: %v", r.Call.ID, err)
			}
		}
		res := evs[len(evs)-1].Result
		if content := rebuilt.Content(); !events.EqualContent(content, res.Content) || events.ContentText(res.Content) != r.Text() {
			t.Fatalf("%s: the deltas do not add up to the result", r.Call.ID)
		}
		if n := len(r.Text()); n < writers*each*len("<0.0>") || strings.Contains(r.Text(), "LATE") {
			t.Fatalf("%s: %d bytes of result", r.Call.ID, n)
		}
	}
	if s := bus.Publisher().Stats(); s.Undelivered != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWriteCutsNoCharacterOnNATS: a tool that streams a command's output
// with io.Copy writes whatever each read returned, which cuts characters
// of several bytes anywhere. On NATS the call's deltas still add up to its
// result, and to what the model reads: a character cut between two writes
// goes out whole, not as U+FFFD for each half. Only bytes that never make a
// character (the output's last ones, here) are U+FFFD, in the deltas and
// in the result alike.
func TestWriteCutsNoCharacterOnNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	defer tk.Close(context.Background())
	const output = "café 日本 😀 naïve\n\xe6\x97"
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "cat"}, func(ctx context.Context, _ struct{}) (string, error) {
		_, err := io.Copy(stream.From(ctx), iotest.OneByteReader(strings.NewReader(output)))
		return "", err
	}))
	var mu sync.Mutex
	var evs []*events.Event
	done := make(chan struct{})
	sub, err := bus.Subscribe(bus.Subjects().Session("cut"), func(ev *events.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
		if ev.Type == events.TypeResult {
			close(done)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()
	sess, _ := tk.Session("cut")
	rs := sess.Run(context.Background(), []toolkit.Call{{ID: "c", Name: "cat"}})
	if rs[0].Text() != output {
		t.Fatalf("the model reads %q", rs[0].Text())
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no result on NATS")
	}
	mu.Lock()
	defer mu.Unlock()
	var re events.Reassembler
	var result *events.Result
	for _, ev := range evs {
		re.Add(ev)
		if ev.Type == events.TypeResult {
			result = ev.Result
		}
	}
	want := strings.ToValidUTF8(output, "\ufffd\ufffd") // the two last bytes, one U+FFFD each
	if got := events.ContentText(re.Content()); got != want {
		t.Fatalf("the deltas add up to %q, want %q", got, want)
	}
	if got := events.ContentText(result.Content); got != want {
		t.Fatalf("the result says %q, want %q", got, want)
	}
}
