package remote_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// frame is one reply frame a hand-written worker sends.
type frame struct {
	kind  string
	seq   int
	data  string
	reset bool
}

// peer answers every call of tool "x" with the frames given: a worker
// written from the protocol, to make what a real one rarely does (lose a
// frame when a connection drops, send garbage).
func peer(t *testing.T, nc *nats.Conn, frames []frame) {
	t.Helper()
	sub, err := nc.Subscribe(wire.DefaultPrefix+".x", func(m *nats.Msg) {
		for _, f := range frames {
			h := nats.Header{wire.HeaderFrame: {f.kind}, wire.HeaderSeq: {strconv.Itoa(f.seq)}, wire.HeaderWorker: {"W1"}}
			if f.reset {
				h.Set(wire.HeaderReset, "1")
			}
			_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: h, Data: []byte(f.data)})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func part(s string) string {
	b, _ := json.Marshal(events.Text(s))
	return string(b)
}

// TestLostFrames: when frames are lost on the way (a gap in their numbers),
// the call's content is mended from the result frame's: what reached the
// agent is kept when it begins the content and the rest follows, or else
// the content starts over; so the model gets the worker's content exactly
// and the deltas still add up. A failure's "Error:" line is written once.
func TestLostFrames(t *testing.T) {
	cases := []struct {
		name   string
		frames []frame
		state  events.State
		text   string
		resets int
	}{
		{"no gap", []frame{{"accept", 1, "", false}, {"delta", 2, part("a"), false}, {"delta", 3, part("b"), false},
			{"result", 4, `{"state":"success","content":[{"type":"text","text":"ab"}]}`, false}}, events.StateSuccess, "ab", 0},
		{"gap", []frame{{"accept", 1, "", false}, {"delta", 2, part("a"), false}, {"delta", 4, part("c"), false},
			{"result", 5, `{"state":"success","content":[{"type":"text","text":"abc"}]}`, false}}, events.StateSuccess, "abc", 0},
		{"gap in a reset", []frame{{"accept", 1, "", false}, {"delta", 2, part("old"), false}, {"delta", 4, part("new"), false},
			{"result", 5, `{"state":"success","content":[{"type":"text","text":"new"}]}`, false}}, events.StateSuccess, "new", 1},
		{"result only", []frame{{"result", 1, `{"state":"success","content":[{"type":"text","text":"all"}]}`, false}}, events.StateSuccess, "all", 0},
		{"worker reset", []frame{{"accept", 1, "", false}, {"delta", 2, part("old"), false}, {"delta", 3, part(""), true}, {"delta", 4, part("new"), false},
			{"result", 5, `{"state":"success","content":[{"type":"text","text":"new"}]}`, false}}, events.StateSuccess, "new", 1},
		{"failure", []frame{{"accept", 1, "", false}, {"delta", 2, part("partial\n"), false},
			{"result", 3, `{"state":"error","content":[{"type":"text","text":"partial\nError: boom"}],"error":"boom"}`, false}}, events.StateError, "partial\nError: boom", 0},
		{"garbage result", []frame{{"accept", 1, "", false}, {"result", 2, `{"state":`, false}}, events.StateError,
			"Error: remote: worker W1 sent a result that does not decode: unexpected end of JSON input", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bus := natstest.Bus(t)
			peer(t, conn(t, bus), tc.frames)
			c := remote.NewClient(conn(t, bus))
			tl, err := c.NewTool(toolkit.Spec{Name: "x"}, json.RawMessage(`{"type":"object"}`))
			if err != nil {
				t.Fatal(err)
			}
			rec := &testutil.Recorder{}
			agent := testutil.Kit(t, toolkit.WithObserver(rec))
			testutil.Add(t, agent, tl)
			r := testutil.Run(t, agent, "s", testutil.Call("c1", "x", `{}`))[0]
			if r.State != tc.state || r.Text() != tc.text {
				t.Fatalf("%s %q, want %s %q", r.State, r.Text(), tc.state, tc.text)
			}
			evs := rec.Of("c1")
			if d := testutil.Deltas(evs); !events.EqualContent(d, r.Content) {
				t.Fatalf("deltas %+v != result %+v", d, r.Content)
			}
			resets := 0
			for _, ev := range evs {
				if ev.Type == events.TypeDelta && ev.Reset {
					resets++
				}
			}
			if resets != tc.resets {
				t.Errorf("%d reset deltas, want %d", resets, tc.resets)
			}
			if strings.Count(r.Text(), "Error:") > 1 {
				t.Errorf("the error line twice: %q", r.Text())
			}
		})
	}
}
