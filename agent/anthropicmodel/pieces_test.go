package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// rawDelta is a content_block_delta whose string is written as given: the
// body of a JSON string, which may hold half of a surrogate pair (escaped)
// or half of a UTF-8 character (raw), as json.Marshal never writes.
func rawDelta(i int, typ, field, body string) ev {
	return ev{"content_block_delta", `{"type":"content_block_delta","index":` + string(rune('0'+i)) +
		`,"delta":{"type":"` + typ + `","` + field + `":"` + body + `"}}`}
}

// Words, arguments and thinking streamed cut inside characters and
// escapes: the reply has them exactly as the model wrote them (the
// thinking goes back to the API unchanged, as its signature requires),
// and every chunk is whole characters that add up to them.
func TestStreamCharactersCutBetweenDeltas(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		evs := []ev{msgStart("claude-test-1", 10),
			thinkingStart(0),
			rawDelta(0, "thinking_delta", "thinking", `I smile \ud83d`),
			rawDelta(0, "thinking_delta", "thinking", `\ude00.`),
			thinkingDelta(0, "signature_delta", "signature", "EqQBCg"),
			blockStop(0),
			textStart(1),
			rawDelta(1, "text_delta", "text", `Hi \ud83d`),
			rawDelta(1, "text_delta", "text", `\ude00!`),
			blockStop(1),
			toolStart(2, "toolu_1", "echo"),
		}
		for _, p := range jsonpiece.CutArgs {
			evs = append(evs, rawDelta(2, "input_json_delta", "partial_json", p))
		}
		writeSSE(w, append(evs, blockStop(2), msgDelta("tool_use", 5), msgStop())...)
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hi 😀!" || len(reply.Calls) != 1 {
		t.Fatalf("reply %+v", reply)
	}
	if string(reply.Calls[0].Args) != jsonpiece.CutWhole || c.args()[0] != jsonpiece.CutWhole {
		t.Errorf("arguments %q, chunks %q, want %q", reply.Calls[0].Args, c.args()[0], jsonpiece.CutWhole)
	}
	var extra struct {
		Thinking []struct{ Thinking string } `json:"anthropic_thinking"`
	}
	if err := json.Unmarshal(reply.Extra, &extra); err != nil || len(extra.Thinking) != 1 || extra.Thinking[0].Thinking != "I smile 😀." {
		t.Errorf("thinking kept as %s (%v)", reply.Extra, err)
	}
	for i, ch := range c.all() {
		if !utf8.ValidString(ch.Text) {
			t.Errorf("chunk %d %q is not UTF-8", i, ch.Text)
		}
	}
	checkChunkOrder(t, c.all(), reply)
}

// A reply cut at max_tokens while the model was writing a tool_use: that
// call does not run, whether its input is half written or never began (a
// tool without parameters would have run with {}); the model is told why
// in its tool_result, the input goes back as written, and the calls
// before it run.
func TestTruncatedCall(t *testing.T) {
	type dirIn struct {
		Dir string `json:"dir"`
	}
	var counted, snapped atomic.Int32
	tk := testutil.Kit(t)
	testutil.Add(t, tk,
		testutil.Tool(t, toolkit.Spec{Name: "count"}, func(_ context.Context, in dirIn) (string, error) {
			counted.Add(1)
			return "42 lines in " + in.Dir, nil
		}),
		testutil.Tool(t, toolkit.Spec{Name: "snap"}, func(context.Context, struct{}) (string, error) {
			snapped.Add(1)
			return "snapped", nil
		}),
	)
	for _, tt := range []struct {
		name  string
		last  []ev
		input any // the cut call's input in the next request
		say   string
	}{
		{"half written", []ev{toolStart(2, "toolu_b", "count"), jsonDelta(2, `{"dir": `), jsonDelta(2, `"very/lo`)},
			obj{anthropicmodel.InvalidArgumentsKey: `{"dir": "very/lo`}, "(16 bytes came, incomplete)"},
		{"not begun", []ev{toolStart(2, "toolu_b", "snap"), jsonDelta(2, "")},
			obj{}, "before its arguments were written"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counted.Store(0)
			snapped.Store(0)
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n > 0 {
					okStream(w, r, n)
					return
				}
				evs := []ev{msgStart("claude-test-1", 10),
					textStart(0), textDelta(0, "Counting."), blockStop(0),
					toolStart(1, "toolu_a", "count"), jsonDelta(1, `{"dir": "a"}`), blockStop(1)}
				evs = append(evs, tt.last...)
				writeSSE(w, append(evs, blockStop(2), msgDelta("max_tokens", 8192), msgStop())...)
			})
			sess := testutil.Session(t, tk, "cut-"+strings.ReplaceAll(tt.name, " ", "-"))
			out, err := agent.New(s.model()).Run(ctx(t), sess, agent.NewConversation("", "count"))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != 2 || counted.Load() != 1 || snapped.Load() != 0 {
				t.Fatalf("%d results, count ran %d times, snap %d; want 2, 1, 0", len(out.Results), counted.Load(), snapped.Load())
			}
			cut := out.Results[1]
			if cut.Call.ID != "toolu_b" || !errors.Is(cut.Err, agent.ErrTruncatedCall) || !strings.Contains(cut.Text(), tt.say) {
				t.Errorf("the cut call: %s %s %v %q", cut.Call.ID, cut.State, cut.Err, cut.Text())
			}
			msgs := s.body(t, 1)["messages"].([]any)
			same(t, "the cut call as it goes back", get(t, msgs, 1, "content", 2, "input"), tt.input)
			if get(t, msgs, 2, "content", 1, "tool_use_id") != "toolu_b" || get(t, msgs, 2, "content", 1, "is_error") != true ||
				!strings.Contains(get(t, msgs, 2, "content", 1, "content", 0, "text").(string), "the reply reached the output token limit") {
				t.Errorf("the cut call's result as it goes back: %v", get(t, msgs, 2, "content", 1))
			}
		})
	}
}

// TestLoopAnswerCut: a reply that stopped at max_tokens (or at the context
// window) with no tool_use ends the loop's run as an answer marked
// Truncated, streamed or whole; one that ended its turn is not.
func TestLoopAnswerCut(t *testing.T) {
	tk := testutil.Kit(t)
	for _, tt := range []struct {
		name   string
		reason string
		stream bool
		cut    bool
	}{
		{"streamed", "max_tokens", true, true},
		{"whole", "max_tokens", false, true},
		{"context window", "model_context_window_exceeded", true, true},
		{"end turn", "end_turn", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if !tt.stream {
					writeJSON(w, 200, message(tt.reason, obj{"type": "text", "text": "The repos"}))
					return
				}
				writeSSE(w, msgStart("claude-test-1", 10), textStart(0), textDelta(0, "The repos"), blockStop(0), msgDelta(tt.reason, 8192), msgStop())
			})
			sess := testutil.Session(t, tk, "answer-cut-"+strings.ReplaceAll(tt.name, " ", "-"))
			out, err := agent.New(s.model(anthropicmodel.WithStreaming(tt.stream))).Run(ctx(t), sess, agent.NewConversation("", "count"))
			if err != nil {
				t.Fatal(err)
			}
			if out.End != agent.EndAnswer || out.Answer != "The repos" || out.Truncated != tt.cut {
				t.Errorf("outcome: %s %q truncated %v, want truncated %v", out.End, out.Answer, out.Truncated, tt.cut)
			}
		})
	}
}
