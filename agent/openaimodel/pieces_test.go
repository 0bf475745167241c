package openaimodel

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
	"github.com/toolstream/toolstream/events"
)

// checkUTF8 fails for a chunk that is not UTF-8 (half of a character).
func checkUTF8(t *testing.T, chunks []agent.Chunk) {
	t.Helper()
	for i, c := range chunks {
		if !utf8.ValidString(c.Text) {
			t.Errorf("chunk %d %q is not UTF-8", i, c.Text)
		}
	}
}

// checkCutArgs checks that the arguments are the model's, byte for byte.
func checkCutArgs(t *testing.T, args json.RawMessage) {
	t.Helper()
	if string(args) != jsonpiece.CutWhole {
		t.Errorf("arguments\n %q, want\n %q", args, jsonpiece.CutWhole)
	}
	var v struct{ S string }
	if err := json.Unmarshal(args, &v); err != nil || v.S != "😀 \né 😀 😀" {
		t.Errorf("arguments decode to %q (%v)", v.S, err)
	}
}

// TestChatCharactersCutBetweenDeltas streams words and arguments cut
// inside characters and escapes: the reply has them exactly as the model
// wrote them, and every chunk is whole characters that add up to them.
func TestChatCharactersCutBetweenDeltas(t *testing.T) {
	evs := []string{
		chunk(`{"role":"assistant","content":"Hi \ud83d"}`, ""),
		chunk(`{"content":"\ude00!"}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"echo","arguments":""}}]}`, ""),
	}
	for _, p := range jsonpiece.CutArgs {
		evs = append(evs, chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+p+`"}}]}`, ""))
	}
	f := newServer(t, sse(append(evs, chunk(`{}`, "tool_calls"), "[DONE]")...))
	req, chunks := streamed(userText("echo"))
	got, err := NewChat(f.client(), "gpt-test").Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "Hi 😀!" || len(got.Calls) != 1 {
		t.Fatalf("reply %+v", got)
	}
	checkCutArgs(t, got.Calls[0].Args)
	checkChunks(t, *chunks, got)
	checkUTF8(t, *chunks)
}

// TestResponsesCharactersCutBetweenDeltas: the same through the Responses
// API's deltas, with and without the events that restate the whole
// arguments (output_item.done, function_call_arguments.done), which must
// agree with what was streamed.
func TestResponsesCharactersCutBetweenDeltas(t *testing.T) {
	whole, _ := json.Marshal(jsonpiece.CutWhole)
	fc := `{"type":"function_call","id":"fc_1","call_id":"call_a","name":"echo","arguments":` + string(whole) + `,"status":"completed"}`
	for _, restate := range []bool{false, true} {
		evs := []string{created(),
			event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi \ud83d"`),
			event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"\ude00!"`),
			event("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"echo","arguments":""}`),
		}
		for _, p := range jsonpiece.CutArgs {
			evs = append(evs, event("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":1,"delta":"`+p+`"`))
		}
		if restate {
			evs = append(evs,
				event("response.function_call_arguments.done", `"item_id":"fc_1","output_index":1,"arguments":`+string(whole)),
				event("response.output_item.done", `"output_index":1,"item":`+fc))
		}
		evs = append(evs, event("response.completed", `"response":`+response("completed", fc, "")))
		f := newServer(t, sse(evs...))
		req, chunks := streamed(userText("echo"))
		got, err := NewResponses(f.client(), "gpt-test").Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != "Hi 😀!" || len(got.Calls) != 1 {
			t.Fatalf("restated %v: reply %+v", restate, got)
		}
		checkCutArgs(t, got.Calls[0].Args)
		checkChunks(t, *chunks, got)
		checkUTF8(t, *chunks)
	}
}

// checkChunksByID holds chunks to the contract when a server began calls
// out of the model's order: each call announced once, before its
// arguments, under its final id and name; the arguments of each index add
// up to those of the call announced there.
func checkChunksByID(t *testing.T, chunks []agent.Chunk, reply *agent.Reply) {
	t.Helper()
	names := map[string]string{}
	for _, c := range reply.Calls {
		names[c.ID] = c.Name
	}
	ids := map[int]string{}
	args := map[string]string{}
	for i, c := range chunks {
		switch c.Kind {
		case agent.ChunkCall:
			if _, dup := ids[c.Index]; dup {
				t.Fatalf("chunk %d: call %d announced twice", i, c.Index)
			}
			if name, ok := names[c.CallID]; !ok || name != c.Name {
				t.Fatalf("chunk %d announces %s %s, which the reply does not have: %+v", i, c.CallID, c.Name, reply.Calls)
			}
			ids[c.Index] = c.CallID
		case agent.ChunkArgs:
			id, ok := ids[c.Index]
			if !ok {
				t.Fatalf("chunk %d: arguments of call %d before its ChunkCall", i, c.Index)
			}
			args[id] += c.Text
		}
	}
	if len(ids) != len(reply.Calls) {
		t.Fatalf("%d calls announced, the reply has %d", len(ids), len(reply.Calls))
	}
	for _, call := range reply.Calls {
		if got := args[call.ID]; got != string(call.Args) && !(strings.TrimSpace(got) == "" && string(call.Args) == "{}") {
			t.Fatalf("call %s: chunks add up to %q, reply has %q", call.ID, got, call.Args)
		}
	}
}

// TestChatCallsOutOfIndexOrder plays a server that begins the call of
// index 1 before that of index 0: the reply has them in the model's order,
// the loop runs them in it and the results go back in it.
func TestChatCallsOutOfIndexOrder(t *testing.T) {
	f := newServer(t,
		sse(
			chunk(`{"role":"assistant","tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"snapshot","arguments":"{"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"cmd\"}"}}]}`, ""),
			chunk(`{}`, "tool_calls"), "[DONE]"),
		sse(chunk(`{"content":"Done."}`, ""), chunk(`{}`, "stop"), "[DONE]"))
	model := NewChat(f.client(), "gpt-test")

	req, chunks := streamed(userText("count and look"))
	got, err := model.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got.Calls {
		order = append(order, c.ID+" "+c.Name+" "+string(c.Args))
	}
	if strings.Join(order, ", ") != `call_a count_lines {"dir":"cmd"}, call_b snapshot {}` {
		t.Fatalf("calls: %q", order)
	}
	checkChunksByID(t, *chunks, got)

	// Through the loop: the follow-up request has the calls, then their
	// results, in the model's order.
	f.mu.Lock()
	f.reqs = nil // the loop's turns are asked from the first reply on
	f.mu.Unlock()
	sess := e2eToolkit(t)
	conv := agent.NewConversation("", "count and look")
	if _, err := agent.New(model).Run(t.Context(), sess, conv); err != nil {
		t.Fatal(err)
	}
	msgs := decode(t, f.requests()[1].body)["messages"].([]any)
	var calls, results []string
	for _, m := range msgs {
		m := m.(map[string]any)
		for _, tc := range asList(m["tool_calls"]) {
			calls = append(calls, tc.(map[string]any)["id"].(string))
		}
		if m["role"] == "tool" {
			results = append(results, m["tool_call_id"].(string))
		}
	}
	if strings.Join(calls, " ") != "call_a call_b" || strings.Join(results, " ") != "call_a call_b" {
		t.Errorf("the next request has calls %v and results %v, want call_a call_b for both", calls, results)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestTruncatedCall: a reply cut at the output token limit while the
// model was writing a call (its arguments half written, or not begun at
// all) does not run that call; the model is told why under the call's id,
// its arguments are kept as written, and the calls before it run. Chat
// Completions (finish_reason "length") and the Responses API (incomplete,
// max_output_tokens) alike.
func TestTruncatedCall(t *testing.T) {
	partial, _ := json.Marshal(`{"dir":"very/lo`)
	fcA := `{"type":"function_call","id":"fc_1","call_id":"call_a","name":"count_lines","arguments":"{\"dir\":\"a\"}","status":"completed"}`
	incomplete := func(output string) string {
		return event("response.incomplete", `"response":`+response("incomplete", output, `"incomplete_details":{"reason":"max_output_tokens"}`))
	}
	chatNext := sse(chunk(`{"content":"Done."}`, ""), chunk(`{}`, "stop"), "[DONE]")
	respNext := sse(created(), event("response.completed", `"response":`+response("completed", msgItem, "")))
	for _, tt := range []struct {
		name    string
		turn    http.HandlerFunc
		next    http.HandlerFunc
		model   func(openai.Client) agent.Model
		cutArgs string // the cut call's arguments in the conversation (blank: none came; {} in the next request)
		say     string
	}{
		{"chat, half written", sse(
			chunk(`{"role":"assistant","content":"Counting.","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\"a\"}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"very/lo"}}]}`, ""),
			chunk(`{}`, "length"), "[DONE]"), chatNext,
			func(c openai.Client) agent.Model { return NewChat(c, "gpt-test") }, `{"dir":"very/lo`, "(15 bytes came, incomplete)"},
		{"chat, not begun", sse(
			chunk(`{"role":"assistant","content":"Counting.","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\"a\"}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"snapshot","arguments":""}}]}`, ""),
			chunk(`{}`, "length"), "[DONE]"), chatNext,
			func(c openai.Client) agent.Model { return NewChat(c, "gpt-test") }, ``, "before its arguments were written"},
		{"chat, whole reply", completion("length", `{"role":"assistant","content":"Counting.","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\"a\"}"}},
			{"id":"call_b","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\"very/lo"}}]}`),
			completion("stop", `{"role":"assistant","content":"Done."}`),
			func(c openai.Client) agent.Model { return NewChat(c, "gpt-test", WithStreaming(false)) }, `{"dir":"very/lo`, "(15 bytes came, incomplete)"},
		{"responses, half written", sse(created(),
			event("response.output_item.added", `"output_index":0,"item":`+fcA),
			event("response.output_item.done", `"output_index":0,"item":`+fcA),
			event("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_b","name":"count_lines","arguments":""}`),
			event("response.function_call_arguments.delta", `"item_id":"fc_2","output_index":1,"delta":`+string(partial)),
			incomplete(fcA)), respNext,
			func(c openai.Client) agent.Model { return NewResponses(c, "gpt-test") }, `{"dir":"very/lo`, "(15 bytes came, incomplete)"},
		{"responses, not begun", sse(created(),
			event("response.output_item.added", `"output_index":0,"item":`+fcA),
			event("response.output_item.done", `"output_index":0,"item":`+fcA),
			event("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_b","name":"snapshot","arguments":""}`),
			incomplete(fcA)), respNext,
			func(c openai.Client) agent.Model { return NewResponses(c, "gpt-test") }, ``, "before its arguments were written"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newServer(t, tt.turn, tt.next)
			sess := e2eToolkit(t)
			conv := agent.NewConversation("", "count")
			out, err := agent.New(tt.model(f.client())).Run(t.Context(), sess, conv)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != 2 || len(f.requests()) != 2 {
				t.Fatalf("results %+v", out.Results)
			}
			if r := out.Results[0]; r.State != events.StateSuccess || r.Text() != "42 lines in a" {
				t.Errorf("the call before the cut: %s %q", r.State, r.Text())
			}
			cut := out.Results[1]
			if cut.Call.ID != "call_b" || !errors.Is(cut.Err, agent.ErrTruncatedCall) || !strings.Contains(cut.Text(), tt.say) {
				t.Errorf("the cut call: %s %s %v %q", cut.Call.ID, cut.State, cut.Err, cut.Text())
			}
			if string(conv.Messages[1].Calls[1].Args) != tt.cutArgs {
				t.Errorf("the cut call's arguments in the conversation: %q, want %q", conv.Messages[1].Calls[1].Args, tt.cutArgs)
			}
			body := string(f.requests()[1].body)
			if !strings.Contains(body, "the reply reached the output token limit") || !strings.Contains(body, "call_b") {
				t.Errorf("the next request does not tell the model:\n%s", body)
			}
			if tt.cutArgs == "" && !strings.Contains(body, `"arguments":"{}"`) {
				t.Errorf("the next request does not send the blank arguments as {}:\n%s", body)
			}
		})
	}
}

// FuzzArgumentsCut cuts valid arguments (and the same text as words) at
// arbitrary points, as a UTF-16 server (halves of a surrogate pair
// escaped alone) or a UTF-8 one (bytes of a character raw) would, and
// streams the pieces through the adapter's parsing: the SDK's decoding of
// each Chat Completions chunk or Responses event, then the adapter's
// assembly. The reassembled arguments are the model's byte for byte (so
// they decode to the same value), the words likewise, and every chunk
// handed on is whole characters that add up to them.
func FuzzArgumentsCut(f *testing.F) {
	f.Add(jsonpiece.CutWhole, []byte{6, 7, 3, 2}, byte(0))
	f.Add(jsonpiece.CutWhole, []byte{6, 7, 3, 2}, byte(1))
	f.Add("héllo 😀 wörld", []byte{1, 5, 1}, byte(2))
	f.Add(`{"a":"\\","b":"\u00e9\ud83d\ude00"}`, []byte{6, 1, 4, 5}, byte(3))
	f.Fuzz(func(t *testing.T, s string, cuts []byte, mode byte) {
		if !utf8.ValidString(s) || len(cuts) > 64 {
			return
		}
		args := jsonpiece.Args(s)
		byBytes, viaResponses := mode&1 != 0, mode&2 != 0
		argPieces := jsonpiece.Cut(args, cuts, byBytes)
		textPieces := jsonpiece.Cut(s, cuts, byBytes)
		var chunks []agent.Chunk
		send := func(c agent.Chunk) { chunks = append(chunks, c) }
		var reply *agent.Reply
		var err error
		if viaResponses {
			st := newRespState(send)
			feed := func(ev string) {
				var u responses.ResponseStreamEventUnion
				if err := json.Unmarshal([]byte(ev), &u); err != nil {
					t.Fatalf("%v: %q", err, ev)
				}
				if err := st.event(u); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range textPieces {
				feed(event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":`+p))
			}
			feed(event("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"echo","arguments":""}`))
			for _, p := range argPieces {
				feed(event("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":1,"delta":`+p))
			}
			feed(event("response.completed", `"response":`+response("completed", "", "")))
			reply, err = st.reply()
		} else {
			cs := newChatStream(send)
			feed := func(c string) {
				var u openai.ChatCompletionChunk
				if err := json.Unmarshal([]byte(c), &u); err != nil {
					t.Fatalf("%v: %q", err, c)
				}
				if err := cs.chunk(u); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range textPieces {
				feed(chunk(`{"content":`+p+`}`, ""))
			}
			feed(chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"echo","arguments":""}}]}`, ""))
			for _, p := range argPieces {
				feed(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+p+`}}]}`, ""))
			}
			feed(chunk(`{}`, "tool_calls"))
			reply, err = cs.result()
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.Calls) != 1 || string(reply.Calls[0].Args) != args {
			t.Fatalf("arguments %q, want %q (pieces %q)", reply.Calls[0].Args, args, argPieces)
		}
		if reply.Text != s {
			t.Fatalf("text %q, want %q (pieces %q)", reply.Text, s, textPieces)
		}
		checkChunks(t, chunks, reply)
		checkUTF8(t, chunks)
	})
}

// TestLoopAnswerCut: a reply that the output token limit cut with no call
// (finish_reason "length", a response incomplete for max_output_tokens)
// ends the loop's run as an answer marked Truncated; a whole one is not.
func TestLoopAnswerCut(t *testing.T) {
	text := event("response.output_text.delta", `"item_id":"msg_1","output_index":0,"delta":"The repos"`)
	for _, tt := range []struct {
		name  string
		turn  http.HandlerFunc
		model func(openai.Client) agent.Model
		cut   bool
	}{
		{"chat, streamed", sse(chunk(`{"role":"assistant","content":"The repos"}`, ""), chunk(`{}`, "length"), "[DONE]"),
			func(c openai.Client) agent.Model { return NewChat(c, "gpt-test") }, true},
		{"chat, whole reply", completion("length", `{"role":"assistant","content":"The repos"}`),
			func(c openai.Client) agent.Model { return NewChat(c, "gpt-test", WithStreaming(false)) }, true},
		{"chat, stop", completion("stop", `{"role":"assistant","content":"The repos"}`),
			func(c openai.Client) agent.Model { return NewChat(c, "gpt-test", WithStreaming(false)) }, false},
		{"responses", sse(created(), text,
			event("response.incomplete", `"response":`+response("incomplete", "", `"incomplete_details":{"reason":"max_output_tokens"}`))),
			func(c openai.Client) agent.Model { return NewResponses(c, "gpt-test") }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newServer(t, tt.turn)
			out, err := agent.New(tt.model(f.client())).Run(t.Context(), e2eToolkit(t), agent.NewConversation("", "count"))
			if err != nil {
				t.Fatal(err)
			}
			if out.End != agent.EndAnswer || out.Answer != "The repos" || out.Truncated != tt.cut {
				t.Errorf("outcome: %s %q truncated %v, want truncated %v", out.End, out.Answer, out.Truncated, tt.cut)
			}
		})
	}
}
