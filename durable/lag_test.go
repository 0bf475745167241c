package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestAnswerWhileObserverBehind: an answer given to a call that waits in a
// process, before the store's observer (asynchronous) has recorded that it
// waits, is taken and reaches the call. It was refused: "does not wait for
// an answer (it is running)", though the call waited for just that.
func TestAnswerWhileObserverBehind(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	release := make(chan struct{})
	setLag(t, func(*events.Event) { <-release })
	p := startAgent(t, js)
	batch := p.sess.Start(ctx, []toolkit.Call{testutil.Call("q1", "ask", `{}`)})
	for deadline := time.Now().Add(5 * time.Second); len(p.sess.Suspended()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call never waited")
		}
	}
	// The observer records the suspension a little later than the answer comes.
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	if err := p.store.Answer(ctx, "conv", "q1", []events.Part{events.Text("42")}, ""); err != nil {
		t.Fatalf("an answer to a waiting call: %v", err)
	}
	r := batch.Wait()[0]
	if r.State != events.StateSuccess || r.Text() != "42" {
		t.Fatalf("q1: %s %q", r.State, r.Text())
	}
}
