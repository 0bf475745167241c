package anthropicmodel_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
)

func TestStreamText(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("claude-test-1-20261201", 25), textStart(0), ping(),
			textDelta(0, "Hello"), textDelta(0, ", "), ping(), textDelta(0, "world."), blockStop(0),
			msgDelta("end_turn", 9), msgStop())
	})
	var c collect
	req := request(&c, agent.UserText("Say hello."))
	req.System = "Be brief."
	reply, err := s.model().Generate(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hello, world." || reply.Finish != agent.FinishStop || len(reply.Calls) != 0 {
		t.Errorf("reply = %+v", reply)
	}
	if reply.Model != "claude-test-1-20261201" {
		t.Errorf("Model = %q", reply.Model)
	}
	if reply.Usage != (agent.Usage{InputTokens: 25, OutputTokens: 9}) {
		t.Errorf("Usage = %+v", reply.Usage)
	}
	var pieces []string
	for _, ch := range c.all() {
		if ch.Kind != agent.ChunkText {
			t.Errorf("unexpected chunk %+v", ch)
		}
		pieces = append(pieces, ch.Text)
	}
	if strings.Join(pieces, "|") != "Hello|, |world." {
		t.Errorf("text chunks = %q", pieces)
	}

	b := s.body(t, 0)
	if b["model"] != "claude-test-1" || b["stream"] != true || b["max_tokens"] != float64(anthropicmodel.DefaultMaxTokens) {
		t.Errorf("model, stream, max_tokens = %v, %v, %v", b["model"], b["stream"], b["max_tokens"])
	}
	if get(t, b, "system", 0, "type") != "text" || get(t, b, "system", 0, "text") != "Be brief." {
		t.Errorf("system = %v", b["system"])
	}
	if get(t, b, "messages", 0, "role") != "user" || get(t, b, "messages", 0, "content", 0, "text") != "Say hello." {
		t.Errorf("messages = %v", b["messages"])
	}
	for _, k := range []string{"tools", "tool_choice", "temperature"} {
		if _, ok := b[k]; ok {
			t.Errorf("request has %q: %v", k, b[k])
		}
	}
}

// A reply with words and two tool calls whose arguments arrive in many
// pieces: ChunkCall comes before its ChunkArgs, the pieces add up to the
// arguments, the calls keep the model's order and ids.
func TestStreamParallelToolCalls(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("claude-test-1", 100),
			textStart(0), textDelta(0, "Let me look."), blockStop(0),
			toolStart(1, "toolu_01A", "read_file"),
			jsonDelta(1, ""), jsonDelta(1, `{"pa`), jsonDelta(1, `th": "RE`), jsonDelta(1, `ADME.md"`), jsonDelta(1, `}`),
			blockStop(1),
			toolStart(2, "toolu_01B", "count_words"),
			jsonDelta(2, `{"text"`), jsonDelta(2, `: "a b`), jsonDelta(2, ` c", "min": 2}`),
			blockStop(2),
			msgDelta("tool_use", 70), msgStop())
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, name, args string }{
		{"toolu_01A", "read_file", `{"path": "README.md"}`},
		{"toolu_01B", "count_words", `{"text": "a b c", "min": 2}`},
	}
	if len(reply.Calls) != len(want) {
		t.Fatalf("calls = %+v", reply.Calls)
	}
	for i, w := range want {
		got := reply.Calls[i]
		if got.ID != w.id || got.Name != w.name || string(got.Args) != w.args {
			t.Errorf("call %d = %s %s %s, want %+v", i, got.ID, got.Name, got.Args, w)
		}
		if c.args()[i] != w.args {
			t.Errorf("ChunkArgs of call %d add up to %q, want %q", i, c.args()[i], w.args)
		}
	}
	if reply.Finish != agent.FinishToolCalls || reply.Text != "Let me look." || c.text() != "Let me look." {
		t.Errorf("finish %q text %q chunks %q", reply.Finish, reply.Text, c.text())
	}
	checkChunkOrder(t, c.all(), reply)
}

// checkChunkOrder holds the chunk contract: each call's ChunkCall (with the
// reply's id and name) comes once, before any of its ChunkArgs, calls begin
// in index order.
func checkChunkOrder(t *testing.T, chunks []agent.Chunk, reply *agent.Reply) {
	t.Helper()
	begun := map[int]bool{}
	next := 0
	for _, ch := range chunks {
		switch ch.Kind {
		case agent.ChunkCall:
			if ch.Index != next {
				t.Errorf("ChunkCall %d, want %d next", ch.Index, next)
			}
			next++
			begun[ch.Index] = true
			if ch.Index < len(reply.Calls) && (ch.CallID != reply.Calls[ch.Index].ID || ch.Name != reply.Calls[ch.Index].Name) {
				t.Errorf("ChunkCall %d = %s %s, reply has %+v", ch.Index, ch.CallID, ch.Name, reply.Calls[ch.Index])
			}
		case agent.ChunkArgs:
			if !begun[ch.Index] {
				t.Errorf("ChunkArgs of call %d before its ChunkCall", ch.Index)
			}
		}
	}
	if next != len(reply.Calls) {
		t.Errorf("%d ChunkCall for %d calls", next, len(reply.Calls))
	}
}

// Blocks are told apart by index, not by arrival: deltas of two tool_use
// blocks that alternate, and text between them, still add up per call.
func TestStreamInterleavedBlocks(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("claude-test-1", 10),
			toolStart(0, "toolu_a", "alpha"),
			toolStart(2, "toolu_b", "beta"),
			jsonDelta(2, `{"b":`), jsonDelta(0, `{"a":`),
			textStart(1), textDelta(1, "between"),
			jsonDelta(0, `1}`), jsonDelta(2, `2}`),
			blockStop(2), blockStop(1), blockStop(0),
			msgDelta("tool_use", 5), msgStop())
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Calls) != 2 || reply.Calls[0].Name != "alpha" || string(reply.Calls[0].Args) != `{"a":1}` ||
		reply.Calls[1].Name != "beta" || string(reply.Calls[1].Args) != `{"b":2}` {
		t.Errorf("calls = %+v", reply.Calls)
	}
	if reply.Text != "between" {
		t.Errorf("text = %q", reply.Text)
	}
	if a := c.args(); a[0] != `{"a":1}` || a[1] != `{"b":2}` {
		t.Errorf("chunk args = %v", a)
	}
	checkChunkOrder(t, c.all(), reply)
}

// Arguments the model wrote badly (here cut by max_tokens) are passed on as
// written; arguments that never came, or came blank, are {}.
func TestStreamArgsAsWritten(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("claude-test-1", 10),
			toolStart(0, "toolu_1", "none"), blockStop(0),
			toolStart(1, "toolu_2", "blank"), jsonDelta(1, ""), jsonDelta(1, "  "), jsonDelta(1, "\n"), blockStop(1),
			toolStart(2, "toolu_3", "spaced"), jsonDelta(2, " "), jsonDelta(2, `{"x": 1}`), blockStop(2),
			toolStart(3, "toolu_4", "broken"), jsonDelta(3, `{"path": "a`), jsonDelta(3, `b\`),
			msgDelta("max_tokens", 8192), msgStop())
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{}`, `{}`, ` {"x": 1}`, `{"path": "ab\`}
	if len(reply.Calls) != len(want) {
		t.Fatalf("calls = %+v", reply.Calls)
	}
	for i, w := range want {
		if string(reply.Calls[i].Args) != w || c.args()[i] != w {
			t.Errorf("call %d args = %q, chunks %q, want %q", i, reply.Calls[i].Args, c.args()[i], w)
		}
	}
	if reply.Finish != agent.FinishLength {
		t.Errorf("finish = %q", reply.Finish)
	}
	checkChunkOrder(t, c.all(), reply)
}

// A tool_use block without an id gets "call_" and random hex, the same in
// its ChunkCall and in the reply; an id used twice in a reply is replaced
// the same way, so that the calls stay distinct.
func TestStreamMissingCallIDs(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("claude-test-1", 10),
			toolStart(0, "", "a"), jsonDelta(0, `{}`), blockStop(0),
			toolStart(1, "toolu_same", "b"), blockStop(1),
			toolStart(2, "toolu_same", "c"), blockStop(2),
			msgDelta("tool_use", 5), msgStop())
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	generated := regexp.MustCompile(`^call_[0-9a-f]{24}$`)
	if len(reply.Calls) != 3 || !generated.MatchString(reply.Calls[0].ID) || reply.Calls[1].ID != "toolu_same" ||
		!generated.MatchString(reply.Calls[2].ID) || reply.Calls[0].ID == reply.Calls[2].ID {
		t.Errorf("calls = %+v", reply.Calls)
	}
	checkChunkOrder(t, c.all(), reply)
	conv := agent.Conversation{Messages: []agent.Message{agent.UserText("go"), {Role: agent.RoleAssistant, Calls: reply.Calls}}}
	for _, call := range reply.Calls {
		conv.Add(agent.Message{Role: agent.RoleTool, CallID: call.ID, Tool: call.Name})
	}
	if err := conv.Check(); err != nil {
		t.Errorf("the reply does not make a valid conversation: %v", err)
	}
}

// An error event after some chunks: an APIError without an HTTP status,
// the API's type and message, retryable for overload and server errors.
func TestStreamErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		typ       string
		retryable bool
	}{
		{"overloaded_error", true},
		{"api_error", true},
		{"rate_limit_error", true},
		{"invalid_request_error", false},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				writeSSE(w, msgStart("claude-test-1", 10), textStart(0), textDelta(0, "Partial"),
					errorEvent(tc.typ, "The server said no: "+tc.typ))
			})
			var c collect
			_, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
			var api *agent.APIError
			if !errors.As(err, &api) {
				t.Fatalf("err = %v (%T), want *agent.APIError", err, err)
			}
			if api.Provider != "anthropic" || api.StatusCode != 0 || api.Type != tc.typ ||
				api.Message != "The server said no: "+tc.typ || api.Retryable != tc.retryable || api.Err == nil {
				t.Errorf("APIError = %+v", api)
			}
			if c.text() != "Partial" {
				t.Errorf("chunks before the error = %q", c.text())
			}
			if s.requests() != 1 {
				t.Errorf("%d requests: the SDK retried", s.requests())
			}
		})
	}
}

// A stream that ends before message_stop (the connection closed cleanly,
// or broken mid-event) is a retryable APIError, never a short reply.
func TestStreamCutShort(t *testing.T) {
	t.Run("clean end", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			writeSSE(w, msgStart("claude-test-1", 10), toolStart(0, "toolu_1", "a"), jsonDelta(0, `{"x":`))
		})
		_, err := s.model().Generate(ctx(t), request(nil, agent.UserText("go")))
		var api *agent.APIError
		if !errors.As(err, &api) || !api.Retryable || api.StatusCode != 0 || !strings.Contains(api.Message, "message_stop") {
			t.Errorf("err = %#v", err)
		}
	})
	t.Run("broken connection", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", "100000") // promise more than comes
			w.WriteHeader(http.StatusOK)
			writeEvents(w, msgStart("claude-test-1", 10), textStart(0), textDelta(0, "Hi"))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		})
		_, err := s.model().Generate(ctx(t), request(nil, agent.UserText("go")))
		var api *agent.APIError
		if !errors.As(err, &api) || !api.Retryable {
			t.Errorf("err = %#v", err)
		}
	})
	t.Run("empty stream", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeSSE(w) })
		_, err := s.model().Generate(ctx(t), request(nil, agent.UserText("go")))
		var api *agent.APIError
		if !errors.As(err, &api) || !api.Retryable {
			t.Errorf("err = %#v", err)
		}
	})
}

// Events that break the protocol fail the turn with a clear, retryable
// error instead of losing or inventing a piece.
func TestStreamProtocolViolation(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []ev
		want string
	}{
		{"delta before start", []ev{jsonDelta(3, `{"x":1}`)}, "input_json_delta for block 3, which never started"},
		{"stop before start", []ev{blockStop(2)}, "content_block_stop for block 2, which never started"},
		{"started twice", []ev{textStart(0), toolStart(0, "toolu_1", "a")}, "content_block_start for block 0, which had started already"},
		{"delta after stop", []ev{toolStart(0, "toolu_1", "a"), blockStop(0), jsonDelta(0, "{}")}, "input_json_delta for block 0, which had stopped"},
		{"stopped twice", []ev{textStart(0), blockStop(0), blockStop(0)}, "content_block_stop for block 0, which had stopped"},
		{"args into text", []ev{textStart(0), jsonDelta(0, "{}")}, "input_json_delta for block 0, which is not a tool_use"},
		{"text into a call", []ev{toolStart(0, "toolu_1", "a"), textDelta(0, "hi")}, "text_delta for block 0, which is not text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				evs := append([]ev{msgStart("claude-test-1", 10)}, tc.evs...)
				writeSSE(w, append(evs, msgDelta("tool_use", 1), msgStop())...)
			})
			_, err := s.model().Generate(ctx(t), request(nil, agent.UserText("go")))
			var api *agent.APIError
			if !errors.As(err, &api) || !api.Retryable || api.Message != "anthropic stream: "+tc.want {
				t.Errorf("err = %#v", err)
			}
		})
	}
}

// Blocks of server tools and deltas of newer kinds (citations) are not
// part of the turn: they are skipped without disturbing the rest.
func TestStreamSkipsOtherBlocks(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("m", 1),
			event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": obj{}}}),
			jsonDelta(0, `{"query":"go"}`), blockStop(0),
			event("content_block_start", obj{"type": "content_block_start", "index": 1, "content_block": obj{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []any{}}}),
			blockStop(1),
			textStart(2), textDelta(2, "Found it."),
			event("content_block_delta", obj{"type": "content_block_delta", "index": 2, "delta": obj{"type": "citations_delta", "citation": obj{"type": "web_search_result_location", "url": "https://example.com", "title": "x", "cited_text": "y", "encrypted_index": "z"}}}),
			blockStop(2),
			event("brand_new_event", obj{"type": "brand_new_event"}),
			msgDelta("end_turn", 3), msgStop())
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Found it." || len(reply.Calls) != 0 || reply.Finish != agent.FinishStop || c.text() != "Found it." || len(c.all()) != 1 {
		t.Errorf("reply %+v, chunks %+v", reply, c.all())
	}
}

// A context cancelled mid-stream ends Generate at once with an error that
// wraps context.Canceled; the server's handler sees the request end (and
// TestMain finds no goroutine left).
func TestStreamCancelled(t *testing.T) {
	handlerDone := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		defer close(handlerDone)
		// Events the client has read but not handed on when it is
		// cancelled must stay unsent.
		writeSSE(w, msgStart("claude-test-1", 10), textStart(0), textDelta(0, "Once upon"), textDelta(0, " a time"), textDelta(0, " there"))
		<-r.Context().Done() // hold the stream open until the client goes
	})
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	req := request(nil, agent.UserText("go"))
	var sent []string
	req.Stream = func(ch agent.Chunk) {
		sent = append(sent, ch.Text)
		cancel()
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.model().Generate(c, req)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want one that wraps context.Canceled", err)
		}
		var api *agent.APIError
		if errors.As(err, &api) {
			t.Errorf("a cancellation is not a provider failure: %#v", api)
		}
		if len(sent) != 1 {
			t.Errorf("chunks sent after the cancellation: %q", sent)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Generate did not return after its context was cancelled")
	}
	select {
	case <-handlerDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never saw the request end")
	}
}

// Usage: input tokens include cache reads and writes; message_delta's
// usage is cumulative and replaces what message_start said.
func TestStreamUsage(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, event("message_start", obj{"type": "message_start", "message": obj{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []any{},
			"usage": obj{"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 5},
		}}), textStart(0), textDelta(0, "x"), blockStop(0),
			event("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": "end_turn"},
				"usage": obj{"input_tokens": 12, "output_tokens": 30, "cache_read_input_tokens": 6}}),
			msgStop())
	})
	reply, err := s.model().Generate(ctx(t), request(nil, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Usage != (agent.Usage{InputTokens: 12 + 2 + 6, OutputTokens: 30}) {
		t.Errorf("usage = %+v", reply.Usage)
	}
}

// content_block_start may carry content itself (initial text, a whole
// input when no delta follows): it is part of the reply and of the chunks.
func TestStreamStartCarriesContent(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, msgStart("m", 1),
			event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": "Hi "}}),
			textDelta(0, "there"), blockStop(0),
			event("content_block_start", obj{"type": "content_block_start", "index": 1, "content_block": obj{"type": "tool_use", "id": "toolu_1", "name": "a", "input": obj{"q": "whole"}}}),
			blockStop(1),
			event("content_block_start", obj{"type": "content_block_start", "index": 2, "content_block": obj{"type": "tool_use", "id": "toolu_2", "name": "b", "input": obj{}}}),
			jsonDelta(2, `{"q":"streamed"}`), blockStop(2),
			msgDelta("tool_use", 3), msgStop())
	})
	var c collect
	reply, err := s.model().Generate(ctx(t), request(&c, agent.UserText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hi there" || c.text() != "Hi there" {
		t.Errorf("text %q, chunks %q", reply.Text, c.text())
	}
	if len(reply.Calls) != 2 || string(reply.Calls[0].Args) != `{"q":"whole"}` || string(reply.Calls[1].Args) != `{"q":"streamed"}` {
		t.Errorf("calls = %+v", reply.Calls)
	}
	if a := c.args(); a[0] != `{"q":"whole"}` || a[1] != `{"q":"streamed"}` {
		t.Errorf("chunk args = %v", a)
	}
}

// A response that began with 200 and then cannot be read (an event that is
// not JSON, a whole message that is not JSON) is retryable: the next
// answer may well be fine.
func TestGarbledResponse(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			writeSSE(w, ev{"message_start", `{"type":"message_start","message":{`})
		})
		_, err := s.model().Generate(ctx(t), request(nil, agent.UserText("go")))
		var api *agent.APIError
		if !errors.As(err, &api) || !api.Retryable || api.StatusCode != 0 {
			t.Errorf("err = %#v", err)
		}
	})
	t.Run("whole", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"msg_1","content":[{"type":"text" "text":"x"}]}`))
		})
		_, err := s.model(anthropicmodel.WithStreaming(false)).Generate(ctx(t), request(nil, agent.UserText("go")))
		var api *agent.APIError
		if !errors.As(err, &api) || !api.Retryable || api.StatusCode != 0 {
			t.Errorf("err = %#v", err)
		}
	})
}
