package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// startFetcher is one life of a process with one idempotent tool, "fetch":
// each of its runs sends runs a channel and returns what it then receives.
func startFetcher(t *testing.T, js jetstream.JetStream, runs chan chan string) *agentProcess {
	t.Helper()
	st := newStore(t, js)
	yes := true
	return runAgent(t, toolkit.New(), st, toolkit.MustTool(toolkit.Spec{Name: "fetch", Idempotent: &yes}, func(ctx context.Context, _ struct{}) (string, error) {
		ch := make(chan string)
		runs <- ch
		select {
		case s := <-ch:
			return s, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
}

func started(t *testing.T, runs chan chan string) chan string {
	t.Helper()
	select {
	case ch := <-runs:
		return ch
	case <-time.After(5 * time.Second):
		t.Fatal("the tool never ran")
		return nil
	}
}

// TestEarlierRunLeavesTheRecord: a call of an idempotent tool still running
// in a process that another one took it over from (it looked dead) cannot
// change the record any more. Its late outcome does not replace the one the
// later run stored, which a replay returns; its late interruption does not
// delete the later run's claim. Before, the late outcome overwrote the stored
// one (a replay returned what the model had not seen), and the late
// interruption deleted the claim (the later run's outcome was then not
// stored at all).
func TestEarlierRunLeavesTheRecord(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	runs1, runs2 := make(chan chan string), make(chan chan string)
	first, second := startFetcher(t, js, runs1), startFetcher(t, js, runs2)
	f1 := []toolkit.Call{testutil.Call("f1", "fetch", `{}`)}
	f2 := []toolkit.Call{testutil.Call("f2", "fetch", `{}`)}

	// A late outcome.
	b1 := first.sess.Start(ctx, f1)
	ch1 := started(t, runs1)
	b2 := second.sess.Start(ctx, f1)
	started(t, runs2) <- "second"
	if r := b2.Wait()[0]; r.Text() != "second" {
		t.Fatalf("f1 in the second process: %s %q", r.State, r.Text())
	}
	ch1 <- "first"
	if r := b1.Wait()[0]; r.Text() != "first" {
		t.Fatalf("f1 in the first process: %s %q", r.State, r.Text())
	}
	if got := recorded(ctx, first.store, "f1"); got != "done: second" {
		t.Errorf("f1 is recorded as %s, want done with the second process's outcome", got)
	}
	if r := second.sess.Run(ctx, f1)[0]; r.Text() != "second" || r.Meta[durable.MetaReplayed] != true {
		t.Errorf("f1 replayed: %q %v", r.Text(), r.Meta)
	}

	// A late interruption.
	b1 = first.sess.Start(ctx, f2)
	started(t, runs1)
	b2 = second.sess.Start(ctx, f2)
	ch2 := started(t, runs2)
	b1.Cancel()
	if r := b1.Wait()[0]; r.State != events.StateInterrupted {
		t.Fatalf("f2 in the first process: %s %q", r.State, r.Text())
	}
	ch2 <- "second"
	if r := b2.Wait()[0]; r.Text() != "second" {
		t.Fatalf("f2 in the second process: %s %q", r.State, r.Text())
	}
	if got := recorded(ctx, first.store, "f2"); got != "done: second" {
		t.Fatalf("f2 is recorded as %s, want done with the second process's outcome", got)
	}
}

// recorded renders the call's record as "state: result text", or the error.
func recorded(ctx context.Context, st *durable.Store, call string) string {
	rec, err := st.Get(ctx, "conv", call)
	switch {
	case err != nil:
		return err.Error()
	case rec.Result == nil:
		return rec.State
	}
	return rec.State + ": " + events.ContentText(rec.Result.Content)
}
