package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

// TestEverySpanEnds: whatever becomes of a call (it succeeds, fails,
// panics, times out, is refused before it starts, is cancelled while it
// runs or while it waits for its turn, waits outside when the toolkit
// closes), every span started is ended, by Close at the latest; and no
// attribute carries the arguments or the result without WithContent.
func TestEverySpanEnds(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(toolkit.WithTracer(tel))
	const secret = "SECRET-CONTENT"
	started := make(chan struct{}, 4)
	no := false
	ask, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ask", Description: "asks a person"}, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk,
		ask,
		tool(t, toolkit.Spec{Name: "ok"}, func(context.Context, pathIn) (string, error) { return "fine " + secret, nil }),
		tool(t, toolkit.Spec{Name: "fail"}, func(context.Context, pathIn) (string, error) { return "", errors.New("it failed on " + secret) }),
		tool(t, toolkit.Spec{Name: "boom"}, func(context.Context, pathIn) (string, error) { panic("boom " + secret) }),
		tool(t, toolkit.Spec{Name: "slow", Timeout: 20 * time.Millisecond}, func(ctx context.Context, _ pathIn) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}),
		tool(t, toolkit.Spec{Name: "hold", Idempotent: &no}, func(ctx context.Context, _ pathIn) (string, error) {
			started <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}),
		tool(t, toolkit.Spec{Name: "hidden"}, func(context.Context, pathIn) (string, error) { return "hidden", nil }),
	)
	m, err := groups.Install(tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(groups.Group{Name: "off", Description: "off", Tools: []string{"hidden"}}); err != nil {
		t.Fatal(err)
	}
	sess := testutil.Session(t, tk, "s")
	args := `{"path":"` + secret + `"}`
	sess.Run(context.Background(), []toolkit.Call{
		testutil.Call("1", "ok", args), testutil.Call("2", "fail", args), testutil.Call("3", "boom", args),
		testutil.Call("4", "slow", args), testutil.Call("5", "nope", args), testutil.Call("6", "ok", `{"path":1}`), testutil.Call("6b", "ok", `{"path":"`+secret+`", "x": "`+secret+`"}`),
		testutil.Call("6c", "ok", `{"path":"`+secret),
		testutil.Call("7", "hidden", args), testutil.Call("8", "reset_tools", `{"off":true}`),
	})
	// Cancelled while one call runs and another (serial) waits its turn.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	sess.Run(ctx, []toolkit.Call{testutil.Call("h1", "hold", args), testutil.Call("h2", "hold", args)})
	// Waiting outside when the toolkit closes.
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("a", "ask", args)})
	for deadline := time.Now().Add(5 * time.Second); len(sess.Suspended()) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	_ = tk.Close(cctx)
	b.Wait()

	ended := map[string]bool{}
	for _, s := range rec.Ended() {
		ended[s.SpanContext().SpanID().String()] = true
		for _, a := range s.Attributes() {
			if v := a.Value.Emit(); containsSecret(v, secret) {
				t.Errorf("span %q: attribute %s carries content without WithContent: %q", s.Name(), a.Key, v)
			}
		}
		if d := s.Status().Description; containsSecret(d, secret) {
			t.Errorf("span %q: status carries content without WithContent: %q", s.Name(), d)
		}
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				if v := a.Value.Emit(); containsSecret(v, secret) {
					t.Errorf("span %q: event %s attribute %s carries content without WithContent: %q", s.Name(), e.Name, a.Key, v)
				}
			}
		}
	}
	for _, s := range rec.Started() {
		if !ended[s.SpanContext().SpanID().String()] {
			t.Errorf("span %q was never ended", s.Name())
		}
	}
	t.Logf("%d spans started, %d ended", len(rec.Started()), len(rec.Ended()))
	if len(rec.Started()) < 10 {
		t.Fatalf("only %d spans started", len(rec.Started()))
	}
}

func containsSecret(v, secret string) bool {
	for i := 0; i+len(secret) <= len(v); i++ {
		if v[i:i+len(secret)] == secret {
			return true
		}
	}
	return false
}
