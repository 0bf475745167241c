package durable_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// startSchemaAgent is an agent process whose external tool "pick" declares
// an output schema.
func startSchemaAgent(t *testing.T, js jetstream.JetStream) *agentProcess {
	t.Helper()
	st := newStore(t, js)
	tk := toolkit.New()
	pick, err := toolkit.NewExternalTool(toolkit.Spec{Name: "pick",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"colour":{"enum":["red","blue"]}},"required":["colour"]}`)},
		json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	return runAgent(t, tk, st, pick)
}

func green() []events.Part {
	return []events.Part{{Type: events.PartJSON, JSON: json.RawMessage(`{"colour":"green"}`)}}
}

func wantInvalidOutput(t *testing.T, what string, r toolkit.Result) {
	t.Helper()
	if r.State != events.StateError || !strings.Contains(r.Text(), `tool "pick" returned a result that does not match its output schema`) ||
		!strings.Contains(r.Text(), "colour") {
		t.Fatalf("%s: %s %q, want the output schema's problems", what, r.State, r.Text())
	}
}

// TestAnswerBreakingOutputSchema: an answer given through the store
// (Store.Answer) that does not match the external tool's output schema is
// treated as a handler's result that does not: the call fails with the
// problems, whether the answer reaches a call that waits now (Deliver: its
// Submit is refused, and the answer cannot be given again, so the call
// would wait forever) or a call run again after a restart (the stored
// answer, replayed by the interceptor, never reached the engine's check).
func TestAnswerBreakingOutputSchema(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()

	// A call that waits in this process.
	p := startSchemaAgent(t, js)
	batch := p.sess.Start(ctx, []toolkit.Call{testutil.Call("p1", "pick", `{}`)})
	waitSuspended(t, p.store, "p1")
	if err := p.store.Answer(ctx, "conv", "p1", green(), ""); err != nil {
		t.Fatal(err)
	}
	done := make(chan toolkit.Result, 1)
	go func() { done <- batch.Wait()[0] }()
	select {
	case r := <-done:
		wantInvalidOutput(t, "answered while it waits", r)
		if !isErr[*toolkit.OutputError](r.Err) {
			t.Fatalf("answered while it waits: cause %v", r.Err)
		}
	case <-time.After(5 * time.Second):
		p.close()
		<-done
		t.Fatal("answered while it waits: the call still waits 5s after the answer")
	}

	// A call answered while no process runs it.
	batch = p.sess.Start(ctx, []toolkit.Call{testutil.Call("p2", "pick", `{}`)})
	waitSuspended(t, p.store, "p2")
	p.close()
	batch.Wait()
	q := startSchemaAgent(t, js)
	if err := q.store.Answer(ctx, "conv", "p2", green(), ""); err != nil {
		t.Fatal(err)
	}
	wantInvalidOutput(t, "answered while no process ran it", q.sess.Run(ctx, []toolkit.Call{testutil.Call("p2", "pick", `{}`)})[0])
	// The failure is the call's stored outcome.
	r := q.sess.Run(ctx, []toolkit.Call{testutil.Call("p2", "pick", `{}`)})[0]
	wantInvalidOutput(t, "run again", r)
	if r.Meta[durable.MetaReplayed] != true {
		t.Fatalf("run again: meta %v", r.Meta)
	}
}
