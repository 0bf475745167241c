package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

var errDBDown = errors.New("db: connection refused at 10.0.0.7:5432")

func TestErrorPolicyMessage(t *testing.T) {
	tk := icKit(t, nil, interceptors.ErrorPolicy(interceptors.Message(func(o toolkit.Result) string {
		if errors.Is(o.Err, errDBDown) {
			return "Error: the database is unavailable; try again later or answer without it"
		}
		return "" // everything else as the engine put it
	})))
	testutil.Add(t, tk,
		icTool(t, toolkit.Spec{Name: "query"}, func(ctx context.Context) (string, error) { return "", errDBDown }),
		icTool(t, toolkit.Spec{Name: "other"}, func(ctx context.Context) (string, error) { return "", errors.New("disk full") }),
		icTool(t, toolkit.Spec{Name: "fine"}, func(ctx context.Context) (string, error) { return "rows: 3", nil }),
	)
	s := testutil.Session(t, tk, "s")

	r := icRun(t, s, testutil.Call("c1", "query", `{}`))
	if r.Text() != "Error: the database is unavailable; try again later or answer without it" {
		t.Fatalf("model reads %q", r.Text())
	}
	if r.State != events.StateError || !errors.Is(r.Err, errDBDown) {
		t.Fatalf("state %s, cause %v: the policy changes only the message", r.State, r.Err)
	}
	if r := icRun(t, s, testutil.Call("c2", "other", `{}`)); r.Text() != "Error: disk full" {
		t.Fatalf("unchanged failure reads %q", r.Text())
	}
	if r := icRun(t, s, testutil.Call("c3", "fine", `{}`)); r.Text() != "rows: 3" || r.State != events.StateSuccess {
		t.Fatalf("success became %s %q", r.State, r.Text())
	}
}

func TestErrorPolicyDefaultKeepsMessage(t *testing.T) {
	tk := icKit(t, nil, interceptors.ErrorPolicy())
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "query"}, func(ctx context.Context) (string, error) { return "", errDBDown }))
	r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "query", `{}`))
	if r.Text() != "Error: "+errDBDown.Error() {
		t.Fatalf("model reads %q", r.Text())
	}
}

func TestErrorPolicyFatalInterruptsTheBatch(t *testing.T) {
	errAuth := errors.New("credentials revoked")
	tk := icKit(t, nil, interceptors.ErrorPolicy(interceptors.Fatal(func(err error) bool { return errors.Is(err, errAuth) })))
	started := make(chan struct{})
	var laterRan icCounter
	testutil.Add(t, tk,
		icTool(t, toolkit.Spec{Name: "auth", ConcurrencySafe: true}, func(ctx context.Context) (string, error) {
			<-started // fail while the other call runs
			return "", errAuth
		}),
		icTool(t, toolkit.Spec{Name: "long", ConcurrencySafe: true}, func(ctx context.Context) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		}),
		icTool(t, toolkit.Spec{Name: "later"}, func(ctx context.Context) (string, error) {
			laterRan.inc()
			return "ran", nil
		}),
	)
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{
		testutil.Call("a", "auth", `{}`), testutil.Call("b", "long", `{}`), testutil.Call("c", "later", `{}`),
	})
	testutil.WaitFor(t, run.Done(), "the run")
	rs := run.Wait()
	if rs[0].State != events.StateError || !errors.Is(rs[0].Err, errAuth) {
		t.Fatalf("fatal call: %s %v", rs[0].State, rs[0].Err)
	}
	if rs[1].State != events.StateInterrupted || !errors.Is(rs[1].Err, toolkit.ErrInterrupted) {
		t.Fatalf("running call: %s %v, want interrupted", rs[1].State, rs[1].Err)
	}
	if rs[2].State != events.StateInterrupted || laterRan.get() != 0 {
		t.Fatalf("later call: %s, ran %d times; want interrupted without running", rs[2].State, laterRan.get())
	}
	if !errors.Is(run.Err(), errAuth) {
		t.Fatalf("Batch.Err() = %v, want the fatal cause", run.Err())
	}
	if !strings.Contains(rs[2].Text(), errAuth.Error()) {
		t.Fatalf("the interrupted call should say why: %q", rs[2].Text())
	}
}

func TestErrorPolicyNonFatalErrorsLetTheRunGoOn(t *testing.T) {
	tk := icKit(t, nil, interceptors.ErrorPolicy(interceptors.Fatal(func(err error) bool { return false })))
	testutil.Add(t, tk,
		icTool(t, toolkit.Spec{Name: "bad"}, func(ctx context.Context) (string, error) { return "", errDBDown }),
		icTool(t, toolkit.Spec{Name: "good"}, func(ctx context.Context) (string, error) { return "ok", nil }),
	)
	run := testutil.Session(t, tk, "s").Start(context.Background(), []toolkit.Call{testutil.Call("a", "bad", `{}`), testutil.Call("b", "good", `{}`)})
	rs := run.Wait()
	if rs[1].State != events.StateSuccess || run.Err() != nil {
		t.Fatalf("second call %s, run error %v", rs[1].State, run.Err())
	}
}

// Interrupted calls are the aftermath of a stop, never the cause of one:
// Fatal is not even asked about them.
func TestErrorPolicyFatalNeverForInterruptedCalls(t *testing.T) {
	var asked icCounter
	tk := icKit(t, nil, interceptors.ErrorPolicy(interceptors.Fatal(func(error) bool { asked.inc(); return true })))
	started := make(chan struct{})
	testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "long"}, func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := testutil.Session(t, tk, "s").Start(ctx, []toolkit.Call{testutil.Call("a", "long", `{}`)})
	testutil.WaitFor(t, started, "the call to start")
	cancel()
	testutil.WaitFor(t, run.Done(), "the run")
	if r := run.Wait()[0]; r.State != events.StateInterrupted || asked.get() != 0 {
		t.Fatalf("got %s; Fatal asked %d times, want never", r.State, asked.get())
	}
}
