package anthropicmodel_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
)

func message(stop string, content ...any) obj {
	return obj{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-1-20261201",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": obj{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3},
	}
}

// Non-streaming replies of each kind: words, tool calls (input objects as
// the API wrote them, an empty one as {}), each stop reason; no chunks, no
// stream flag.
func TestWholeReplies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     obj
		text    string
		calls   []string // id name args
		finish  agent.Finish
		nothink bool
	}{
		{"text", message("end_turn", obj{"type": "text", "text": "Hello"}, obj{"type": "text", "text": " there"}), "Hello there", nil, agent.FinishStop, true},
		{"stop sequence", message("stop_sequence", obj{"type": "text", "text": "x"}), "x", nil, agent.FinishStop, true},
		{"tool calls", message("tool_use",
			obj{"type": "text", "text": "Reading."},
			obj{"type": "tool_use", "id": "toolu_1", "name": "read", "input": obj{"path": "a.txt"}},
			obj{"type": "tool_use", "id": "toolu_2", "name": "list", "input": obj{}},
			obj{"type": "tool_use", "name": "noid", "input": nil},
		), "Reading.", []string{`toolu_1 read {"path":"a.txt"}`, `toolu_2 list {}`, `* noid {}`}, agent.FinishToolCalls, true},
		{"max tokens", message("max_tokens", obj{"type": "text", "text": "cut"}), "cut", nil, agent.FinishLength, true},
		{"context window", message("model_context_window_exceeded", obj{"type": "text", "text": "cut"}), "cut", nil, agent.FinishLength, true},
		{"refusal", message("refusal"), "", nil, agent.FinishFiltered, true},
		{"pause turn", message("pause_turn", obj{"type": "text", "text": "wait"}), "wait", nil, agent.Finish("pause_turn"), true},
		{"thinking", message("end_turn",
			obj{"type": "thinking", "thinking": "Hmm.", "signature": "sig=="},
			obj{"type": "redacted_thinking", "data": "opaque"},
			obj{"type": "text", "text": "Done."},
		), "Done.", nil, agent.FinishStop, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, tc.msg) })
			var c collect
			reply, err := s.model(anthropicmodel.WithStreaming(false)).Generate(ctx(t), request(&c, agent.UserText("go")))
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != tc.text || reply.Finish != tc.finish || reply.Model != "claude-test-1-20261201" {
				t.Errorf("reply = %+v", reply)
			}
			if reply.Usage != (agent.Usage{InputTokens: 15, OutputTokens: 5}) {
				t.Errorf("usage = %+v", reply.Usage)
			}
			if len(reply.Calls) != len(tc.calls) {
				t.Fatalf("calls = %+v", reply.Calls)
			}
			for i, want := range tc.calls {
				got := reply.Calls[i].ID + " " + reply.Calls[i].Name + " " + string(reply.Calls[i].Args)
				if want[0] == '*' {
					got = "*" + got[len(reply.Calls[i].ID):]
				}
				if got != want {
					t.Errorf("call %d = %s, want %s", i, got, want)
				}
			}
			if (reply.Extra == nil) != tc.nothink {
				t.Errorf("Extra = %s", reply.Extra)
			}
			if len(c.all()) != 0 {
				t.Errorf("a whole reply sent chunks: %+v", c.all())
			}
			if _, ok := s.body(t, 0)["stream"]; ok {
				t.Errorf("the request has a stream field")
			}
		})
	}
}

// A whole (non-streamed) request whose context is cancelled while the
// server thinks: an error that wraps context.Canceled, not an APIError.
func TestWholeCancelled(t *testing.T) {
	arrived := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		close(arrived)
		<-r.Context().Done()
	})
	c, cancel := context.WithCancel(ctx(t))
	go func() {
		<-arrived
		cancel()
	}()
	_, err := s.model(anthropicmodel.WithStreaming(false)).Generate(c, request(nil, agent.UserText("go")))
	var api *agent.APIError
	if !errors.Is(err, context.Canceled) || errors.As(err, &api) {
		t.Errorf("err = %#v", err)
	}
}

// A server (a proxy) that answers with JSON where a stream was asked for
// gives the turn all the same: a whole message is the reply, its pieces
// sent as chunks; an error body sent with status 200 is that error, its
// message and type kept, whether streaming or not; a body that is no
// message is a clear error, never an empty answer.
func TestJSONWithStatus200(t *testing.T) {
	toolUse := obj{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": obj{"city": "Oslo"}}
	for _, stream := range []bool{true, false} {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			writeJSON(w, 200, message("tool_use", obj{"type": "text", "text": "Looking."}, toolUse))
		})
		var c collect
		got, err := s.model(anthropicmodel.WithStreaming(stream)).Generate(ctx(t), request(&c, agent.UserText("go")))
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		if got.Text != "Looking." || len(got.Calls) != 1 || got.Calls[0].ID != "toolu_1" || string(got.Calls[0].Args) != `{"city":"Oslo"}` || got.Finish != agent.FinishToolCalls {
			t.Errorf("stream %v: reply %+v", stream, got)
		}
		if stream && (c.text() != "Looking." || c.args()[0] != `{"city":"Oslo"}`) {
			t.Errorf("chunks %+v", c.all())
		}

		for _, tc := range []struct {
			name, body string
			typ, msg   string
			retryable  bool
		}{
			{"overloaded", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded", true},
			{"invalid", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`,
				"invalid_request_error", "messages: at least one message is required", false},
			{"not a message", `{"hello":"world"}`, "", `anthropic: the response is not a message: {"hello":"world"}`, true},
		} {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(200)
				w.Write([]byte(tc.body))
			})
			got, err := s.model(anthropicmodel.WithStreaming(stream)).Generate(ctx(t), request(nil, agent.UserText("go")))
			var api *agent.APIError
			if !errors.As(err, &api) || got != nil {
				t.Fatalf("stream %v, %s: reply %+v, err %v", stream, tc.name, got, err)
			}
			if api.Type != tc.typ || api.Message != tc.msg || api.Retryable != tc.retryable || api.StatusCode != 0 {
				t.Errorf("stream %v, %s: %+v", stream, tc.name, api)
			}
		}
	}
}

// TestWholeCutCall: a whole reply (not streamed, or a JSON answer to a
// streamed request) cut at max_tokens while the model was writing its last
// call, before any input: the API gives the block an empty input. Its
// arguments stay blank, as the stream's do, so that the loop does not run
// it with {} (ErrTruncatedCall); the calls before it keep theirs.
func TestWholeCutCall(t *testing.T) {
	msg := message("max_tokens",
		obj{"type": "tool_use", "id": "toolu_1", "name": "list", "input": obj{}},
		obj{"type": "tool_use", "id": "toolu_2", "name": "read", "input": obj{}},
	)
	for _, stream := range []bool{false, true} {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, msg) })
		var c collect
		reply, err := s.model(anthropicmodel.WithStreaming(stream)).Generate(ctx(t), request(&c, agent.UserText("go")))
		if err != nil {
			t.Fatal(err)
		}
		if reply.Finish != agent.FinishLength || len(reply.Calls) != 2 {
			t.Fatalf("streaming %v: reply %+v", stream, reply)
		}
		if string(reply.Calls[0].Args) != "{}" || len(reply.Calls[1].Args) != 0 {
			t.Errorf("streaming %v: arguments %q and %q, want {} and blank (the cut call)", stream, reply.Calls[0].Args, reply.Calls[1].Args)
		}
		if stream && (c.args()[0] != "{}" || c.args()[1] != "") {
			t.Errorf("chunks' arguments %v, want them to add up to the reply's", c.args())
		}
	}
}
