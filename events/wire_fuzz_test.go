package events_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
)

// wireEvent builds, from fuzz input, an event of the kind the toolkit and
// the agent loop make: any ids and texts (hostile ones included), any JSON
// values a tool or a model may write (invalid UTF-8, lone surrogates,
// U+2028, NUL, huge numbers), and figures in the ranges the producers keep
// them in (a fraction in 0..1, a duration of at least 0).
func wireEvent(kind uint8, session, call, tool, text string, raw, data []byte, f float64, n uint64, reset bool) *events.Event {
	if session == "" {
		session = "s"
	}
	if call == "" {
		call = "c"
	}
	ev := &events.Event{Version: events.Version, Session: session, Call: call, Tool: tool, Seq: max(n%1000, 1),
		Time: time.Unix(int64(n%4e9), int64(n%1e9)).UTC()}
	if !json.Valid(raw) && n&8 == 0 {
		raw = nil // else kept: a tool may write a JSON part that is not JSON
	}
	frac := math.Abs(f)
	if !(frac <= 1) {
		frac = 1 / (1 + frac) // in 0..1; NaN becomes NaN, see below
	}
	if math.IsNaN(frac) {
		frac = 0.5
	}
	dur := math.Abs(f)
	if math.IsInf(dur, 0) || math.IsNaN(dur) {
		dur = 0
	}
	states := []events.State{events.StateSuccess, events.StateError, events.StateDenied, events.StateInterrupted, events.StateTimeout}
	parts := []events.Part{events.Text(text), {Type: events.PartJSON, JSON: raw}, events.Binary(tool, data)}
	var content []events.Part
	for i, p := range parts {
		if !p.IsEmpty() && n>>i&1 == 1 {
			content = events.AppendPart(content, p)
		}
	}
	switch kind % 8 {
	case 0:
		ev.Type, ev.Start = events.TypeStart, &events.Start{Args: raw, Index: int(n % 64)}
	case 1:
		pr := &events.Progress{Message: text, Data: raw, Dropped: n % 3}
		if n&1 == 1 {
			pr.Fraction = &frac
		}
		ev.Type, ev.Progress = events.TypeProgress, pr
	case 2:
		p := parts[n%3]
		if p.IsEmpty() {
			p = events.Text("") // the toolkit puts out no empty part but a reset's
		}
		ev.Type, ev.Delta, ev.Reset = events.TypeDelta, &p, reset
	case 3:
		ev.Type, ev.Suspend = events.TypeSuspend, &events.Suspend{Reason: []string{"external", "approval"}[n%2]}
	case 4:
		r := &events.Result{State: states[n%5], Content: content, DurationMS: dur, Dropped: n % 2}
		if r.State.IsError() && text != "" {
			r.Error = text
		}
		if len(data) > 0 {
			r.Meta = map[string]any{tool: string(data), "n": f}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				r.Meta["n"] = nil
			}
		}
		ev.Type, ev.Result = events.TypeResult, r
	case 5:
		ev.Type, ev.Data = "approval", raw
		if len(raw) == 0 {
			ev.Data = json.RawMessage("null")
		}
	case 6:
		ev.Call, ev.Tool = "", ""
		b := &events.BatchEnd{Batch: "batch-" + session, DurationMS: dur}
		for i := range int(n % 40) {
			b.Calls = append(b.Calls, events.BatchCall{Call: call + strings.Repeat("x", i), Tool: tool, State: states[i%5]})
			if i%2 == 1 && text != "" {
				b.Calls[i].Error = text
			}
		}
		ev.Type, ev.Data = events.TypeBatchEnd, events.AppendBatchEnd(nil, b)
	case 7:
		ev.Call, ev.Tool = "", ""
		ev.Type, ev.Data = "text_delta", raw
		if len(raw) == 0 {
			ev.Data = json.RawMessage(`{"turn":1,"delta":""}`)
		}
	}
	return ev
}

// FuzzEventWire: whole events, from hostile input, on the wire. Each
// event's JSON is UTF-8, validates against docs/events.schema.json, and
// Decode reads it back to an event that encodes to the same bytes; and
// cut to fit any limit (events.Fit), every piece is at most the limit with
// the widest sequence number, validates, and the pieces add up to the
// content as a client rebuilds it from the whole event, with a result's
// content_size and content_parts describing exactly that.
func FuzzEventWire(f *testing.F) {
	f.Add(uint8(0), "conv-42", "call_1", "count_lines", "hello", []byte(`{"a":[1,2]}`), []byte{1, 2, 3}, 0.42, uint64(7), uint16(400), false)
	f.Add(uint8(1), "a.>", "*", "", "\xff\u2028\x00\"<&>", []byte("\"\xed\xa0\x80\\ud800 \xe6\x97\""), []byte(nil), math.NaN(), uint64(3), uint16(300), true)
	f.Add(uint8(2), "日本", "c c", "t", strings.Repeat("é\n😀\xff", 200), []byte(`1e400`), []byte{0}, math.Inf(1), uint64(2), uint16(350), true)
	f.Add(uint8(4), "s", "c", "t", strings.Repeat("\\\"", 300), []byte("{\"k\":\"\u2029\"}"), []byte("d\xff"), 12.5, uint64(7), uint16(512), false)
	f.Add(uint8(6), "s", "call", "tool", "error text \xe2\x80", []byte(nil), []byte(nil), 3.0, uint64(39), uint16(600), false)
	f.Add(uint8(2), "s", "c", "t", "", []byte(`[`+strings.Repeat(`"\u0000",`, 100)+`0]`), []byte(nil), 0.0, uint64(1), uint16(256), true)
	f.Add(uint8(4), "s", "c", "t", strings.Repeat("\xfc", 200), []byte("{not JSON <\xff>"), []byte("d"), 1.0, uint64(15), uint16(400), false)
	f.Fuzz(func(t *testing.T, kind uint8, session, call, tool, text string, raw, data []byte, fl float64, n uint64, limit uint16, reset bool) {
		if !utf8.ValidString(session) || !utf8.ValidString(call) {
			return // the toolkit refuses such ids
		}
		ev := wireEvent(kind, session, call, tool, text, raw, data, fl, n, reset)
		out := events.AppendJSON(nil, ev)
		checkWire(t, out)
		dec, err := events.Decode(out)
		if err != nil {
			t.Fatalf("Decode: %v\n%.300q", err, out)
		}
		// Encoded again, it reads the same (the bytes differ where invalid
		// UTF-8 was written \ufffd and is now U+FFFD itself).
		again := events.AppendJSON(nil, dec)
		if dec2, err := events.Decode(again); err != nil || !reflect.DeepEqual(dec, dec2) {
			t.Fatalf("decoded and encoded again: %v\n%.300q\n%.300q", err, out, again)
		}
		max := int(limit)
		pieces, _, err := events.Fit(ev, max)
		if errors.Is(err, events.ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("Fit: %v", err)
		}
		var re events.Reassembler
		for i := range pieces {
			p := pieces[i]
			p.Seq = math.MaxUint64
			b := events.AppendJSON(nil, &p)
			if len(b) > max {
				t.Fatalf("piece %d: %d bytes, limit %d", i, len(b), max)
			}
			checkWire(t, b)
			d, err := events.Decode(b)
			if err != nil {
				t.Fatalf("piece %d: %v", i, err)
			}
			if err := re.Add(d); err != nil {
				t.Fatalf("piece %d: %v", i, err)
			}
		}
		switch {
		case dec.Type == events.TypeDelta:
			var whole events.Reassembler
			whole.Add(dec)
			if got, want := re.Content(), whole.Content(); !events.EqualContent(events.Concat(got...), events.Concat(want...)) {
				t.Fatalf("pieces add up to %+v, want %+v", got, want)
			}
		case dec.Type == events.TypeResult:
			r := pieces[0].Result
			if !r.ContentOmitted {
				break
			}
			if size := events.ContentSize(dec.Result.Content); r.ContentSize != size || r.ContentParts != len(dec.Result.Content) {
				t.Fatalf("content_size %d, content_parts %d; the content on the wire: %d bytes, %d parts",
					r.ContentSize, r.ContentParts, size, len(dec.Result.Content))
			}
		case dec.Type == events.TypeBatchEnd:
			b, err := events.DecodeBatchEnd(&pieces[0])
			if err != nil {
				t.Fatalf("batch_end cut: %v", err)
			}
			whole, _ := events.DecodeBatchEnd(dec)
			if len(b.Calls)+b.CallsOmitted != len(whole.Calls) {
				t.Fatalf("batch_end cut to %d calls, %d omitted, of %d", len(b.Calls), b.CallsOmitted, len(whole.Calls))
			}
		}
	})
}

// checkWire fails unless b is one event as the protocol has it: UTF-8,
// valid by the schema, and read by encoding/json as by Decode.
func checkWire(t *testing.T, b []byte) {
	t.Helper()
	if !utf8.Valid(b) {
		t.Fatalf("not UTF-8: %.300q", b)
	}
	if err := testutil.ValidateEvent(b); err != nil {
		t.Fatalf("%v\n%.300q", err, b)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	dec, err := events.Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	var back map[string]any
	if err := json.Unmarshal(events.AppendJSON(nil, dec), &back); err != nil || !reflect.DeepEqual(generic, back) {
		t.Fatalf("Decode reads what encoding/json reads differently:\n%v\n%v", generic, back)
	}
}
