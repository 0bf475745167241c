package durable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestOddSessionAndCallIDs: sessions and call ids with characters NATS keys
// do not allow (dots, wildcards, spaces, non-ASCII) or long ones are kept,
// replayed, listed and answered like any other.
func TestOddSessionAndCallIDs(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	p := startAgent(t, js)
	for _, sid := range []string{"a.b*c>d", "sp ace/ü~%", strings.Repeat("s", 200)} {
		sess, err := p.tk.Session(sid)
		if err != nil {
			t.Logf("session %q refused by the toolkit: %v", sid, err)
			continue
		}
		for _, cid := range []string{"call.1", "c*>", "ü ü", strings.Repeat("c", 256)} {
			r := sess.Run(ctx, []toolkit.Call{{ID: cid, Name: "look", Args: []byte(`{}`)}})[0]
			if r.State != events.StateSuccess {
				t.Fatalf("session %q call %q: %s %q", sid, cid, r.State, r.Text())
			}
			r = sess.Run(ctx, []toolkit.Call{{ID: cid, Name: "look", Args: []byte(`{}`)}})[0]
			if r.Meta[durable.MetaReplayed] != true {
				t.Fatalf("session %q call %q: not replayed: %v", sid, cid, r.Meta)
			}
		}
		b := sess.Start(ctx, []toolkit.Call{{ID: "q.*>", Name: "ask", Args: []byte(`{}`)}})
		var pending []durable.Record
		for range 500 {
			if pending, err = p.store.Pending(ctx, sid); err != nil {
				t.Fatalf("pending of %q: %v", sid, err)
			}
			if len(pending) == 1 {
				break
			}
		}
		if len(pending) != 1 || pending[0].Session != sid {
			t.Fatalf("pending of %q: %+v", sid, pending)
		}
		if err := p.store.Answer(ctx, sid, "q.*>", []events.Part{events.Text("ok")}, ""); err != nil {
			t.Fatal(err)
		}
		if r := b.Wait()[0]; r.Text() != "ok" {
			t.Fatalf("answer in %q: %s %q", sid, r.State, r.Text())
		}
	}
}
