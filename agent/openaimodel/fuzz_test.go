package openaimodel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolstream/toolstream/agent"
)

// ops reads a fuzz input as a sequence of small operations: each takes a
// flag byte, a choice byte and a piece of text of up to 7 bytes.
type ops struct{ data []byte }

func (o *ops) next() (flags, choice byte, text string, ok bool) {
	if len(o.data) < 3 {
		return 0, 0, "", false
	}
	flags, choice = o.data[0], o.data[1]
	n := min(int(o.data[2]%8), len(o.data)-3)
	text = string(o.data[3 : 3+n])
	o.data = o.data[3+n:]
	return flags, choice, text, true
}

var (
	fuzzIDs   = []string{"call_1", "call_2", "x", "call_1"}
	fuzzNames = []string{"a", "b", "count_lines"}
)

// checkAssembled holds an assembled reply to the rules every stream must
// keep, whatever the server sent: the chunks match the reply (checkChunksByID),
// ids are present and distinct, no argument byte is lost or made up.
func checkAssembled(t *testing.T, chunks []agent.Chunk, reply *agent.Reply, fed int) {
	t.Helper()
	checkChunksByID(t, chunks, reply)
	ids := map[string]bool{}
	for i, c := range reply.Calls {
		if c.ID == "" || ids[c.ID] || c.Name == "" {
			t.Fatalf("call %d: id %q name %q (ids so far %v)", i, c.ID, c.Name, ids)
		}
		ids[c.ID] = true
	}
	sent := 0
	for _, c := range chunks {
		if c.Kind == agent.ChunkArgs {
			sent += len(c.Text)
		}
	}
	if sent != fed {
		t.Fatalf("%d argument bytes fed, %d sent as chunks", fed, sent)
	}
}

// FuzzChatToolCallDeltas feeds the Chat Completions call assembler any
// sequence of tool-call deltas (index or none, id or none, name or none,
// pieces of arguments, not necessarily JSON): it never panics, never loses
// or invents an argument byte, announces each call once before its
// arguments with a distinct id, and fails only for a call that never got a
// name.
func FuzzChatToolCallDeltas(f *testing.F) {
	f.Add([]byte("\x07\x00\x04{\"a\"\x01\x00\x03:1}"))                   // one call, two pieces
	f.Add([]byte("\x07\x00\x00\x07\x01\x00\x01\x00\x02{}\x01\x01\x01x")) // two interleaved calls
	f.Add([]byte("\x06\x00\x02{}\x06\x01\x02[]"))                        // no index: each name starts a call
	f.Add([]byte("\x01\x00\x03{\"a\x05\x00\x01b"))                       // arguments before the name
	f.Add([]byte("\x01\x00\x03abc"))                                     // a call that never gets a name
	f.Add([]byte("\x07\x00\x00\x07\x03\x00"))                            // the same id twice
	f.Add([]byte("\x05\x00\x02{}\x05\x00\x02{}"))                        // one tool twice at index 0, whole each time
	f.Add([]byte("\x07\x05\x02{}\x07\x00\x02{}"))                        // index 2 begins before index 0
	f.Fuzz(func(t *testing.T, data []byte) {
		var chunks []agent.Chunk
		calls := chatCalls{set: newCallSet(func(c agent.Chunk) { chunks = append(chunks, c) }), byIndex: map[int64]*callSlot{}}
		o := ops{data}
		fed := 0
		for {
			flags, choice, text, ok := o.next()
			if !ok {
				break
			}
			delta := map[string]any{"function": map[string]any{"arguments": text}}
			if flags&1 != 0 {
				delta["index"] = int(choice % 3)
			}
			if flags&2 != 0 {
				delta["id"] = fuzzIDs[int(choice/3)%len(fuzzIDs)]
			}
			if flags&4 != 0 {
				delta["function"].(map[string]any)["name"] = fuzzNames[int(choice/7)%len(fuzzNames)]
			}
			raw, err := json.Marshal(delta)
			if err != nil {
				t.Fatal(err)
			}
			var tc openai.ChatCompletionChunkChoiceDeltaToolCall
			if err := json.Unmarshal(raw, &tc); err != nil {
				t.Fatal(err)
			}
			fed += len(tc.Function.Arguments)
			if err := calls.add(tc); err != nil {
				t.Fatal(err)
			}
		}
		got, err := calls.set.result(false)
		if err != nil {
			named := true
			for _, c := range calls.set.calls {
				named = named && c.name != ""
			}
			if named || !strings.Contains(err.Error(), "has no function name") {
				t.Fatalf("error %v with every call named: %v", err, named)
			}
			return
		}
		checkAssembled(t, chunks, &agent.Reply{Calls: got}, fed)
		// The reply is in the model's order: by the server's index,
		// arrival order among calls of one index.
		slot := map[string]*callSlot{}
		for _, c := range calls.set.calls {
			slot[c.id] = c
		}
		for i := 1; i < len(got); i++ {
			a, b := slot[got[i-1].ID], slot[got[i].ID]
			if a.order > b.order || a.order == b.order && a.pos > b.pos {
				t.Fatalf("call %d (index %d, began %d) before call %d (index %d, began %d)", i-1, a.order, a.pos, i, b.order, b.pos)
			}
		}
	})
}

// FuzzResponsesEvents feeds the Responses assembler any sequence of the
// events it reads (items added and done, argument deltas and their done,
// text deltas), keyed by item ids and output indexes that may be missing
// or point anywhere, then response.completed. Final arguments either
// continue what was streamed or repeat it, as a server that keeps the
// protocol does: the same rules as FuzzChatToolCallDeltas hold.
func FuzzResponsesEvents(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x01\x00\x03{\"a\x02\x00\x02\"}\x03\x00\x00"))
	f.Add([]byte("\x00\x00\x00\x00\x09\x00\x01\x00\x01x\x01\x09\x01y\x04\x00\x02hi"))
	f.Add([]byte("\x01\x05\x02{}\x03\x05\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var chunks []agent.Chunk
		st := newRespState(func(c agent.Chunk) { chunks = append(chunks, c) })
		o := ops{data}
		text := ""
		for {
			kind, choice, piece, ok := o.next()
			if !ok {
				break
			}
			idx := int(choice % 4)
			itemID := "fc_" + string(rune('0'+idx))
			if choice&0x80 != 0 {
				itemID = "" // keyed by output index only
			}
			var ev map[string]any
			switch kind % 5 {
			case 0:
				item := map[string]any{"type": "function_call", "id": itemID, "arguments": ""}
				if choice&0x40 == 0 {
					item["name"] = fuzzNames[idx%len(fuzzNames)]
				}
				if choice&0x20 == 0 {
					item["call_id"] = fuzzIDs[idx]
				}
				ev = map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item}
			case 1:
				ev = map[string]any{"type": "response.function_call_arguments.delta", "item_id": itemID, "output_index": idx, "delta": piece}
			case 2, 3:
				name := "response.function_call_arguments.done"
				if kind%5 == 3 {
					name = "response.output_item.done"
				}
				ev = map[string]any{"type": name, "item_id": itemID, "output_index": idx}
				// Done events go through the same lookup; give them the
				// arguments the assembler has for that call, plus more.
				c := st.peek(itemID, int64(idx))
				args := piece
				if c != nil {
					args = c.args.String() + piece
				}
				if kind%5 == 2 {
					ev["arguments"] = args
				} else {
					ev["item"] = map[string]any{"type": "function_call", "id": itemID, "arguments": args, "name": fuzzNames[idx%len(fuzzNames)]}
				}
			case 4:
				ev = map[string]any{"type": "response.output_text.delta", "item_id": "msg", "output_index": idx, "delta": piece}
			}
			raw, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var union responses.ResponseStreamEventUnion
			if err := json.Unmarshal(raw, &union); err != nil {
				t.Fatal(err)
			}
			if union.Type == "response.output_text.delta" {
				text += union.Delta
			}
			if err := st.event(union); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.event(responses.ResponseStreamEventUnion{Type: "response.completed", Response: responses.Response{Status: "completed"}}); err != nil {
			t.Fatal(err)
		}
		reply, err := st.reply()
		if err != nil {
			for _, c := range st.calls.calls {
				if c.name == "" {
					return
				}
			}
			t.Fatalf("error %v with every call named", err)
		}
		if reply.Text != text {
			t.Fatalf("text %q, fed %q", reply.Text, text)
		}
		fed := 0
		for _, c := range st.calls.calls {
			fed += c.args.Len()
		}
		checkAssembled(t, chunks, reply, fed)
	})
}

// peek finds the call an event would be about, without opening one.
func (st *respState) peek(itemID string, outIdx int64) *callSlot {
	if c := st.byItem[itemID]; itemID != "" && c != nil {
		return c
	}
	return st.byOutput[outIdx]
}
