package toolkit_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

func externalTool(t *testing.T, spec toolkit.Spec) *toolkit.Tool {
	t.Helper()
	tool, err := toolkit.NewExternalTool(spec, []byte(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// TestExternalToolResume: the call is suspended, the run waits for it while
// the other calls finish, and a submitted result completes the run.
func TestExternalToolResume(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask_user", ConcurrencySafe: true}),
		testutil.Tool(t, toolkit.Spec{Name: "local", ConcurrencySafe: true}, func(ctx context.Context, _ none) (string, error) { return "local done", nil }))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{
		testutil.Call("ext", "ask_user", `{"question":"colour?"}`), testutil.Call("loc", "local", ``),
	})
	var seen []string
	for r := range run.Results() {
		seen = append(seen, r.Call.ID+":"+string(r.State))
		if r.State == events.StateSuspended {
			if r.Final() || string(r.Call.Args) != `{"question":"colour?"}` {
				t.Errorf("suspension notice %+v", r)
			}
			if got := s.Suspended(); len(got) != 1 || got[0].ID != "ext" {
				t.Errorf("Suspended() = %v", got)
			}
			if err := s.Submit("nope", nil, nil); !errors.Is(err, toolkit.ErrUnknownCall) {
				t.Errorf("Submit(unknown) = %v", err)
			}
			if err := s.Submit("ext", []events.Part{events.Text("blue")}, nil); err != nil {
				t.Errorf("Submit: %v", err)
			}
			if err := s.Submit("ext", []events.Part{events.Text("again")}, nil); !errors.Is(err, toolkit.ErrUnknownCall) {
				t.Errorf("second Submit = %v", err)
			}
		}
	}
	if !slices.Contains(seen, "ext:suspended") || !slices.Contains(seen, "ext:success") || !slices.Contains(seen, "loc:success") || len(seen) != 3 {
		t.Fatalf("results stream %v", seen)
	}
	if slices.Index(seen, "ext:suspended") > slices.Index(seen, "ext:success") {
		t.Fatalf("suspension after result: %v", seen)
	}
	rs := run.Wait()
	if rs[0].State != events.StateSuccess || rs[0].Text() != "blue" {
		t.Fatalf("external result %s %q", rs[0].State, rs[0].Text())
	}
	if got := testutil.Types(rec.Of("ext")); !slices.Equal(got, []events.Type{"start", "suspend", "delta", "result"}) {
		t.Fatalf("external events %v", got)
	}
	if len(s.Suspended()) != 0 {
		t.Fatal("call still listed as suspended")
	}
}

func TestExternalToolSubmitError(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask_user"}))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "ask_user", `{"question":"?"}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			if err := s.Submit("e", nil, errors.New("user closed the dialog")); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := run.Wait()[0]
	if r.State != events.StateError || r.Text() != "Error: user closed the dialog" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

// TestSerialExternalBlocksLaterCalls: an unsafe external call holds back the
// calls after it until it is submitted.
func TestSerialExternalBlocksLaterCalls(t *testing.T) {
	tk := testutil.Kit(t)
	ran := make(chan struct{})
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask"}),
		testutil.Tool(t, toolkit.Spec{Name: "after"}, func(ctx context.Context, _ none) (string, error) {
			close(ran)
			return "", nil
		}))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "ask", `{"question":"?"}`), testutil.Call("a", "after", ``)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			select {
			case <-ran:
				t.Fatal("the call after a suspended serial call ran before the submission")
			default:
			}
			if err := s.Submit("e", []events.Part{events.Text("ok")}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	testutil.WaitFor(t, ran, "later call")
}

func TestExternalToolTimeoutAndValidation(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask", ConcurrencySafe: true, Timeout: 20 * time.Millisecond}))
	s := testutil.Session(t, tk, "s")
	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("t", "ask", `{"question":"?"}`), testutil.Call("v", "ask", `{}`)})
	if rs[0].State != events.StateTimeout || !errors.Is(rs[0].Err, toolkit.ErrTimeout) {
		t.Fatalf("timeout: %s %v", rs[0].State, rs[0].Err)
	}
	if rs[1].State != events.StateError || !strings.Contains(rs[1].Text(), "question: is required") {
		t.Fatalf("validation: %s %q", rs[1].State, rs[1].Text())
	}
	if len(s.Suspended()) != 0 {
		t.Fatal("timed-out call still suspended")
	}
	if err := s.Submit("t", nil, nil); !errors.Is(err, toolkit.ErrUnknownCall) {
		t.Fatalf("Submit after timeout: %v", err)
	}
}

func TestSessionCloseInterruptsSuspended(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask"}))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "ask", `{"question":"?"}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			s.Close()
		}
	}
	r := run.Wait()[0]
	if r.State != events.StateInterrupted || !errors.Is(r.Err, toolkit.ErrClosed) {
		t.Fatalf("%s %v", r.State, r.Err)
	}
	if slices.Contains(tk.Sessions(), "s") {
		t.Fatal("closed session still listed")
	}
	// An answer that comes after the close is told why it is too late.
	if err := s.Submit("e", []events.Part{events.Text("late")}, nil); !errors.Is(err, toolkit.ErrClosed) {
		t.Fatalf("Submit after Close = %v, want ErrClosed", err)
	}
}

// TestOnWait: an interceptor's OnWait hook is told of a wait before the
// suspend event goes out (for an external tool's wait and for Suspend), and
// of Suspend's resume before the call goes on; a removed hook is not told;
// a call waiting while a hook blocks is already there for Submit.
func TestOnWait(t *testing.T) {
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	obs := toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == "suspend" || ev.Type == "result" {
			note(ev.Call + " " + string(ev.Type))
		}
	})
	tk := testutil.Kit(t, toolkit.WithInlineObserver(obs))
	testutil.Add(t, tk, externalTool(t, toolkit.Spec{Name: "ask_user"}),
		testutil.Tool(t, toolkit.Spec{Name: "guarded"}, func(ctx context.Context, _ none) (string, error) {
			note("guarded ran")
			return "ok", nil
		}))
	var s *toolkit.Session
	tk.Use(toolkit.Interceptor{Name: "recorder", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		remove := inv.OnWait(func(reason string) {
			note(inv.Call.ID + " hook " + reason)
			if reason == "external" && len(s.Suspended()) == 1 {
				// Registered: an answer given now is taken.
				if err := s.Submit(inv.Call.ID, []events.Part{events.Text("blue")}, nil); err != nil {
					note("submit: " + err.Error())
				}
			}
		})
		if inv.Call.ID == "removed" {
			remove()
		}
		defer remove()
		return next(ctx, inv)
	}}, toolkit.Interceptor{Name: "gate", Tools: []string{"guarded"}, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		_, resume := inv.Suspend("approval")
		return next(resume(), inv)
	}})
	s = testutil.Session(t, tk, "s")
	rs := s.Run(context.Background(), []toolkit.Call{testutil.Call("g", "guarded", ``)})
	rs = append(rs, s.Run(context.Background(), []toolkit.Call{testutil.Call("e", "ask_user", `{"question":"?"}`)})...)
	rs = append(rs, s.Run(context.Background(), []toolkit.Call{testutil.Call("removed", "guarded", ``)})...)
	for _, r := range rs {
		if r.State != events.StateSuccess {
			t.Fatalf("%s: %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	want := []string{
		"g hook approval", "g suspend", "g hook ", "guarded ran", "g result",
		"e hook external", "e suspend", "e result",
		"removed suspend", "guarded ran", "removed result",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("order\n got %q\nwant %q", log, want)
	}
}

// TestSuspendWhileContextRead: an interceptor suspends its call while a
// goroutine it started reads the call's context: no data race (the call's
// suspension state is published before any interceptor runs).
func TestSuspendWhileContextRead(t *testing.T) {
	type key struct{}
	tk := testutil.Kit(t)
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "guarded"}, func(ctx context.Context, _ none) (string, error) {
		return "ok", nil
	}))
	tk.Use(toolkit.Interceptor{Name: "gate", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
		stop, done := make(chan struct{}), make(chan struct{})
		callCtx := ctx
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					_ = callCtx.Value(key{})
				}
			}
		}()
		time.Sleep(time.Millisecond)
		_, resume := inv.Suspend("approval")
		resumed := resume()
		close(stop)
		<-done
		return next(resumed, inv)
	}})
	rs := testutil.Run(t, tk, "s", testutil.Call("g", "guarded", ``))
	if rs[0].State != events.StateSuccess {
		t.Fatalf("%s: %v", rs[0].State, rs[0].Err)
	}
}
