package anthropicmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzAccumulate drives the stream accumulator with any sequence of
// events (decoded from the fuzz input: an op byte, a block index byte, a
// piece of text) and holds it to the chunk contract whenever it returns a
// reply: it never panics; each call's ChunkCall comes once, in index
// order, with the reply's id and name, before its ChunkArgs; the ChunkArgs
// of a call add up to its final arguments; those are never blank; the
// ChunkText pieces add up to the text; ids are distinct.
func FuzzAccumulate(f *testing.F) {
	f.Add([]byte("\x00\x00\x01\x01\x00hello\x07\x00\x02\x01\x01\x03\x01{\"a\"\x03\x01:1}\x05\x01\x06tool_use\x08"))
	f.Add([]byte("\x00\x02\x00\x03\x00 \x03\x00\x05\x00\x06max_tokens\x08"))
	f.Add([]byte("\x02\x00\x02\x01\x03\x01{\x03\x00}\x05\x00\x05\x01\x08"))
	f.Add([]byte("\x00\x04\x00\x09\x00hmm\x0a\x00sig\x05\x00\x02\x01\x05\x01\x08"))
	f.Add([]byte("\x02\x00\x03\x00\"x\x06\x08"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var chunks []agent.Chunk
		a := newAccumulator(func(c agent.Chunk) { chunks = append(chunks, c) })
		var failed bool
		for len(in) >= 2 && !failed {
			op, idx := in[0]%11, int64(in[1]%4)
			in = in[2:]
			// A piece of text runs to the next byte below 0x0b.
			end := bytes.IndexFunc(in, func(r rune) bool { return r < 0x0b })
			if end < 0 {
				end = len(in)
			}
			text := string(in[:end])
			in = in[end:]
			var err error
			switch op {
			case 0:
				a.messageStart("m", usage{input: 1})
			case 1:
				err = a.startText(idx, text)
			case 2:
				err = a.startToolUse(idx, text, "tool", "")
			case 3:
				err = a.delta(idx, "input_json_delta", "", text)
			case 4:
				err = a.startThinking(idx, thinkingBlock{Type: "thinking"})
			case 5:
				err = a.stop(idx)
			case 6:
				a.reason = text
			case 7:
				err = a.delta(idx, "text_delta", "", text)
			case 8:
				a.stopped = true
			case 9:
				err = a.delta(idx, "thinking_delta", "", text)
			case 10:
				err = a.delta(idx, "signature_delta", "", text)
			}
			failed = err != nil
		}
		if failed {
			return
		}
		reply, err := a.reply()
		if err != nil {
			return
		}
		args := map[int]string{}
		var text strings.Builder
		next := 0
		for _, c := range chunks {
			switch c.Kind {
			case agent.ChunkCall:
				if c.Index != next || c.Index >= len(reply.Calls) || c.CallID != reply.Calls[c.Index].ID || c.Name != reply.Calls[c.Index].Name {
					t.Fatalf("ChunkCall %+v (next %d), calls %+v", c, next, reply.Calls)
				}
				next++
			case agent.ChunkArgs:
				if c.Index >= next {
					t.Fatalf("ChunkArgs of call %d before its ChunkCall", c.Index)
				}
				if c.Text == "" {
					t.Fatalf("an empty ChunkArgs")
				}
				args[c.Index] += c.Text
			case agent.ChunkText:
				text.WriteString(c.Text)
			}
		}
		if next != len(reply.Calls) {
			t.Fatalf("%d ChunkCall, %d calls", next, len(reply.Calls))
		}
		ids := map[string]bool{}
		for i, c := range reply.Calls {
			if string(c.Args) != args[i] {
				t.Fatalf("call %d: args %q, chunks add up to %q", i, c.Args, args[i])
			}
			if strings.TrimSpace(string(c.Args)) == "" && (reply.Finish != agent.FinishLength || i < len(reply.Calls)-1) {
				// Only the call a reply cut at the token limit was
				// writing keeps arguments that never came blank.
				t.Fatalf("call %d: blank args %q", i, c.Args)
			}
			if c.ID == "" || ids[c.ID] {
				t.Fatalf("call %d: id %q empty or used twice", i, c.ID)
			}
			ids[c.ID] = true
		}
		if reply.Text != text.String() {
			t.Fatalf("text %q, chunks add up to %q", reply.Text, text.String())
		}
		if reply.Extra != nil && !json.Valid(reply.Extra) {
			t.Fatalf("Extra is not JSON: %q", reply.Extra)
		}
	})
}

// FuzzWireInput: whatever arguments a stored call has, its tool_use input
// is a JSON object the API accepts; a JSON object goes as written; other
// arguments are kept in full under InvalidArgumentsKey (or, encoded twice,
// as the object inside).
func FuzzWireInput(f *testing.F) {
	for _, s := range []string{``, ` `, `{}`, `{"a":1}`, ` {"a": [1, 2]} `, `{"a":`, `[1]`, `7`, `null`, `"{\"a\":1}"`, `"x"`, "\xff{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		out := wireInput(args)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(out, &obj); err != nil || obj == nil {
			t.Fatalf("input %q for args %q is not a JSON object: %v", out, args, err)
		}
		trimmed := bytes.TrimSpace(args)
		switch {
		case len(trimmed) == 0:
			if string(out) != "{}" {
				t.Fatalf("blank args gave %q", out)
			}
		case trimmed[0] == '{' && json.Valid(trimmed):
			if !bytes.Equal(out, trimmed) {
				t.Fatalf("object args %q gave %q", args, out)
			}
		default:
			var inner string
			if trimmed[0] == '"' && json.Unmarshal(trimmed, &inner) == nil {
				in := bytes.TrimSpace([]byte(inner))
				if len(in) > 0 && in[0] == '{' && json.Valid(in) {
					if !bytes.Equal(out, in) {
						t.Fatalf("args encoded twice %q gave %q", args, out)
					}
					return
				}
			}
			var kept map[string]string
			if err := json.Unmarshal(out, &kept); err != nil || len(kept) != 1 {
				t.Fatalf("args %q gave %q", args, out)
			}
			if s, ok := kept[InvalidArgumentsKey]; !ok || (utf8.Valid(args) && s != string(args)) {
				t.Fatalf("args %q kept as %q", args, out)
			}
		}
	})
}

// FuzzExtra: any Extra (another adapter's, or damaged) maps without a panic,
// and what it gives back is thinking blocks only.
func FuzzExtra(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `[1]`, `{"anthropic_thinking":null}`, `{"anthropic_thinking":[null]}`,
		`{"anthropic_thinking":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"redacted_thinking","data":"d"},{"type":"other"}]}`,
		`{"reasoning":[{"id":"rs_1"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		blocks := assistantContent(agent.Message{Role: agent.RoleAssistant, Extra: raw, Calls: []toolkit.Call{{ID: "toolu_1", Name: "x"}}})
		if len(blocks) == 0 || blocks[len(blocks)-1].OfToolUse == nil {
			t.Fatalf("the call is not the last block: %+v", blocks)
		}
		for _, b := range blocks[:len(blocks)-1] {
			if b.OfThinking == nil && b.OfRedactedThinking == nil {
				t.Fatalf("Extra gave a block that is not thinking: %+v", b)
			}
		}
	})
}

// wireID keeps ids the API accepts and maps the others, the same way each
// time, onto ids it accepts.
func TestWireID(t *testing.T) {
	for _, id := range []string{"toolu_01A-b", "call_abc123"} {
		if wireID(id) != id {
			t.Errorf("wireID(%q) = %q", id, wireID(id))
		}
	}
	for _, id := range []string{"", "call.1", "a b", "é", "fc:1/2"} {
		got := wireID(id)
		if got == id || got != wireID(id) || wireID(got) != got || !strings.HasPrefix(got, "toolu_") {
			t.Errorf("wireID(%q) = %q", id, got)
		}
	}
	if wireID("a.b") == wireID("a:b") {
		t.Error("two ids map to one")
	}
}

// FuzzWholeReply: any 2xx JSON body read in place of a stream gives
// either a reply whose chunks match it (text adds up, each call announced
// once with its id and name, its arguments whole and a JSON object) or an
// *agent.APIError; an error object is never an answer. It never panics.
func FuzzWholeReply(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"hello":"world"}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"error":null,"type":"message","content":[]}`,
		`{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_1","name":"w","input":{"a":1}},{"type":"tool_use","id":"toolu_1","name":"w","input":null}],"stop_reason":"tool_use"}`,
		`{"content":[{"type":"tool_use","name":"w"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var chunks []agent.Chunk
		reply, err := wholeReply(body, func(c agent.Chunk) { chunks = append(chunks, c) })
		if err != nil {
			var api *agent.APIError
			var se *streamError
			if !errors.As(err, &api) && !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is neither an APIError nor a stream error", err, err)
			}
			return
		}
		var probe struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &probe) == nil && len(probe.Error) > 0 && string(probe.Error) != "null" {
			t.Fatalf("body with an error %s gave a reply %+v", probe.Error, reply)
		}
		var text strings.Builder
		args := map[int]string{}
		ids := map[string]bool{}
		for _, c := range chunks {
			switch c.Kind {
			case agent.ChunkText:
				text.WriteString(c.Text)
			case agent.ChunkCall:
				if c.Index >= len(reply.Calls) || reply.Calls[c.Index].ID != c.CallID || ids[c.CallID] {
					t.Fatalf("chunk %+v for calls %+v", c, reply.Calls)
				}
				ids[c.CallID] = true
			case agent.ChunkArgs:
				args[c.Index] += c.Text
			}
		}
		if text.String() != reply.Text {
			t.Fatalf("text chunks %q, reply %q", text.String(), reply.Text)
		}
		for i, c := range reply.Calls {
			if c.ID == "" || args[i] != string(c.Args) || len(bytes.TrimSpace(c.Args)) == 0 {
				t.Fatalf("call %d %+v, argument chunks %q", i, c, args[i])
			}
		}
	})
}

// FuzzArgumentsCut cuts valid arguments (and the same text as words and
// as thinking) at arbitrary points, as a UTF-16 server (halves of a
// surrogate pair escaped alone) or a UTF-8 one (bytes of a character raw)
// would, and streams the pieces through the adapter's parsing: the SDK's
// decoding of each event, then the accumulator. The reassembled arguments
// are the model's byte for byte (so they decode to the same value), the
// words and the thinking likewise, and every chunk handed on is whole
// characters that add up to them.
func FuzzArgumentsCut(f *testing.F) {
	f.Add(jsonpiece.CutWhole, []byte{6, 7, 3, 2}, false)
	f.Add(jsonpiece.CutWhole, []byte{6, 7, 3, 2}, true)
	f.Add("héllo 😀 wörld", []byte{1, 5, 1}, false)
	f.Fuzz(func(t *testing.T, s string, cuts []byte, byBytes bool) {
		if !utf8.ValidString(s) || len(cuts) > 64 {
			return
		}
		args := jsonpiece.Args(s)
		var chunks []agent.Chunk
		a := newAccumulator(func(c agent.Chunk) { chunks = append(chunks, c) })
		feed := func(ev string) {
			var u anthropic.MessageStreamEventUnion
			if err := json.Unmarshal([]byte(ev), &u); err != nil {
				t.Fatalf("%v: %q", err, ev)
			}
			if err := a.event(u); err != nil {
				t.Fatal(err)
			}
		}
		delta := func(i int, typ, field, piece string) string {
			return `{"type":"content_block_delta","index":` + strconv.Itoa(i) + `,"delta":{"type":"` + typ + `","` + field + `":` + piece + `}}`
		}
		feed(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`)
		feed(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
		for _, p := range jsonpiece.Cut(s, cuts, byBytes) {
			feed(delta(0, "thinking_delta", "thinking", p))
		}
		feed(`{"type":"content_block_stop","index":0}`)
		feed(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)
		for _, p := range jsonpiece.Cut(s, cuts, byBytes) {
			feed(delta(1, "text_delta", "text", p))
		}
		feed(`{"type":"content_block_stop","index":1}`)
		feed(`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"echo","input":{}}}`)
		argPieces := jsonpiece.Cut(args, cuts, byBytes)
		for _, p := range argPieces {
			feed(delta(2, "input_json_delta", "partial_json", p))
		}
		feed(`{"type":"content_block_stop","index":2}`)
		feed(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`)
		feed(`{"type":"message_stop"}`)
		reply, err := a.reply()
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.Calls) != 1 || string(reply.Calls[0].Args) != args {
			t.Fatalf("arguments %q, want %q (pieces %q)", reply.Calls[0].Args, args, argPieces)
		}
		if reply.Text != s {
			t.Fatalf("text %q, want %q", reply.Text, s)
		}
		if th := thinkingFromExtra(reply.Extra); len(th) != 1 || th[0].Thinking != s {
			t.Fatalf("thinking %s, want %q", reply.Extra, s)
		}
		var text, argText strings.Builder
		for i, c := range chunks {
			if !utf8.ValidString(c.Text) {
				t.Fatalf("chunk %d %q is not UTF-8", i, c.Text)
			}
			switch c.Kind {
			case agent.ChunkText:
				text.WriteString(c.Text)
			case agent.ChunkArgs:
				argText.WriteString(c.Text)
			}
		}
		if text.String() != s || argText.String() != args {
			t.Fatalf("chunks add up to text %q and arguments %q", text.String(), argText.String())
		}
	})
}
