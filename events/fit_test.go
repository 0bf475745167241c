package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestTextPartAlwaysHasText: a reset delta carries an empty text part, and
// the wire says "text":"" rather than leaving the field out (a client that
// concatenates delta.text must never meet undefined).
func TestTextPartAlwaysHasText(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	empty := Text("")
	ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Seq: 4, Time: ts, Delta: &empty, Reset: true}
	want := `{"v":1,"type":"delta","session":"s","call":"c","seq":4,"time":"2026-01-02T03:04:05Z","delta":{"type":"text","text":""},"reset":true}`
	if got := AppendJSON(nil, ev); string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	if got, err := json.Marshal(ev); err != nil || string(got) != want {
		t.Fatalf("json.Marshal: %s, %v", got, err)
	}
	// Other parts are unchanged: no "text" key.
	j := Part{Type: PartJSON, JSON: json.RawMessage(`{"a":1}`)}
	if got, _ := json.Marshal(j); string(got) != `{"type":"json","json":{"a":1}}` {
		t.Fatalf("json part: %s", got)
	}
}

// refPart and refResult are Part and Result as plain structs: encoding/json
// by reflection is the reference for the hand-written encoder wherever the
// wire rules add nothing (non-empty text, content present).
type refPart struct {
	Type      PartType        `json:"type"`
	Text      string          `json:"text,omitempty"`
	JSON      json.RawMessage `json:"json,omitempty"`
	Data      []byte          `json:"data,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
}

type refResult struct {
	State      State          `json:"state"`
	Content    []refPart      `json:"content"`
	Error      string         `json:"error,omitempty"`
	DurationMS float64        `json:"duration_ms"`
	Meta       map[string]any `json:"meta,omitempty"`
	Dropped    uint64         `json:"dropped,omitempty"`
}

func TestPartAndResultMatchReflection(t *testing.T) {
	n := 0
	for _, ev := range testEvents() {
		var parts []Part
		if ev.Delta != nil {
			parts = append(parts, *ev.Delta)
		}
		if r := ev.Result; r != nil {
			parts = append(parts, r.Content...)
			if r.Content == nil || !json.Valid(AppendJSON(nil, ev)) {
				continue
			}
			ref := refResult{State: r.State, Error: r.Error, DurationMS: r.DurationMS, Meta: r.Meta, Dropped: r.Dropped}
			ref.Content = []refPart{}
			for _, p := range r.Content {
				ref.Content = append(ref.Content, refPart(p))
			}
			skip := false
			for _, p := range r.Content {
				skip = skip || p.Type == PartText && p.Text == "" || p.JSON != nil && !json.Valid(p.JSON)
			}
			want, err := marshalWire(ref)
			if err != nil || skip {
				continue
			}
			if got := appendResult(nil, r); !bytes.Equal(got, want) {
				t.Fatalf("result\n got %.300s\nwant %.300s", got, want)
			}
			n++
		}
		for _, p := range parts {
			if p.Type == PartText && p.Text == "" || p.JSON != nil && !json.Valid(p.JSON) {
				continue
			}
			want, err := marshalWire(refPart(p))
			if err != nil {
				t.Fatal(err)
			}
			if got := appendPart(nil, &p); !bytes.Equal(got, want) {
				t.Fatalf("part\n got %.300s\nwant %.300s", got, want)
			}
			n++
		}
	}
	if n < 40 {
		t.Fatalf("only %d comparisons", n)
	}
	// A part's JSON that is not valid JSON stays valid on the wire, as a
	// string of its bytes.
	bad := Part{Type: PartJSON, JSON: json.RawMessage("nope <\xff>")}
	if got := appendPart(nil, &bad); string(got) != `{"type":"json","json":"nope \u003c\ufffd\u003e"}` {
		t.Fatalf("invalid JSON part: %s", got)
	}
}

// nastyText is text of about n bytes with everything an encoder escapes
// and multi-byte characters to cut through.
func nastyText(n int) string {
	var b strings.Builder
	i := 0
	for b.Len() < n {
		fmt.Fprintf(&b, "line %d: \"quoted\" <tag> & \\ 日本語 😀 \u2028 \t\x01 e\u0301\n", i)
		i++
	}
	return b.String()
}

// encodedSizes encodes each event with the widest sequence number a
// publisher could give it and checks that it decodes.
func checkFits(t *testing.T, evs []Event, max int) {
	t.Helper()
	for i := range evs {
		ev := evs[i]
		ev.Seq = 1<<64 - 1
		b := AppendJSON(nil, &ev)
		if len(b) > max {
			t.Fatalf("piece %d: %d bytes, max %d", i, len(b), max)
		}
		if _, err := Decode(b); err != nil {
			t.Fatalf("piece %d does not decode: %v", i, err)
		}
	}
}

// rebuild sends events through the wire (AppendJSON, Decode) and a
// Reassembler.
func rebuild(t *testing.T, evs []Event) []Part {
	t.Helper()
	var r Reassembler
	for i := range evs {
		ev, err := Decode(AppendJSON(nil, &evs[i]))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	if r.Pending() {
		t.Fatal("chunks still pending at the end")
	}
	return r.Content()
}

func TestFitText(t *testing.T) {
	text := nastyText(3 << 20)
	part := Text(text)
	ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Tool: "t", Seq: 7, Time: time.Now(), Delta: &part, Reset: true}
	const max = 256 << 10
	out, lossy, err := Fit(ev, max)
	if err != nil || lossy {
		t.Fatalf("Fit: %v, lossy %v", err, lossy)
	}
	if len(out) < 12 {
		t.Fatalf("%d pieces for %d bytes of text escaped to more than 3 MiB", len(out), len(text))
	}
	checkFits(t, out, max)
	var b strings.Builder
	for i, p := range out {
		if p.Chunk != nil || p.Delta.Type != PartText || !utf8.ValidString(p.Delta.Text) && utf8.ValidString(text) {
			t.Fatalf("piece %d is not a text delta of valid UTF-8", i)
		}
		if p.Reset != (i == 0) || p.Seq != 7 {
			t.Fatalf("piece %d: reset %v, seq %d", i, p.Reset, p.Seq)
		}
		b.WriteString(p.Delta.Text)
	}
	if b.String() != text {
		t.Fatal("the pieces do not add up to the text")
	}
	if got := rebuild(t, out); len(got) != 1 || got[0].Text != text {
		t.Fatal("the reassembler does not rebuild the text")
	}
}

func TestFitChunks(t *testing.T) {
	var items []map[string]any
	for i := 0; len(items) < 40000; i++ {
		items = append(items, map[string]any{"path": fmt.Sprintf("dir/<file> %d \"x\".go", i), "lines": i, "note": "日本 😀 \u2028"})
	}
	j, err := JSON(items)
	if err != nil {
		t.Fatal(err)
	}
	bin := Binary("image/png", bytes.Repeat([]byte{0, 1, 2, 0xff}, 300000))
	for _, part := range []Part{j, bin} {
		ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Seq: 3, Time: time.Now(), Delta: &part, Reset: true}
		const max = 200 << 10
		out, lossy, err := Fit(ev, max)
		if err != nil || lossy {
			t.Fatalf("Fit: %v, lossy %v", err, lossy)
		}
		checkFits(t, out, max)
		var data strings.Builder
		for i, p := range out {
			if p.Delta != nil || p.Chunk == nil || p.Chunk.Index != i || p.Chunk.Count != len(out) || p.Reset != (i == 0) {
				t.Fatalf("piece %d: %+v", i, p)
			}
			data.WriteString(p.Chunk.Data)
		}
		if data.String() != string(appendPart(nil, &part)) {
			t.Fatal("the chunks' data is not the part's JSON")
		}
		got := rebuild(t, out)
		if len(got) != 1 || !got[0].Equal(part) {
			t.Fatalf("%s part: rebuilt %d parts", part.Type, len(got))
		}
	}
}

func TestFitResult(t *testing.T) {
	content := []Part{Text(nastyText(1 << 20)), {Type: PartJSON, JSON: json.RawMessage(`{"a":[1,2]}`)}, Binary("image/png", []byte{1, 2, 3})}
	ev := &Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Seq: 9, Time: time.Now(),
		Result: &Result{State: StateError, Content: content, Error: "boom", DurationMS: 3.5, Meta: map[string]any{"files": 12}}}
	out, lossy, err := Fit(ev, 64<<10)
	if err != nil || lossy || len(out) != 1 {
		t.Fatalf("Fit: %d events, lossy %v, %v", len(out), lossy, err)
	}
	r := out[0].Result
	want := int64(len(content[0].Text) + len(`{"a":[1,2]}`) + 3)
	if !r.ContentOmitted || r.Content != nil || r.ContentSize != want || r.ContentParts != 3 ||
		r.Error != "boom" || r.State != StateError || r.DurationMS != 3.5 || r.Meta["files"] != 12 || r.MetaOmitted {
		t.Fatalf("result %+v (size want %d)", r, want)
	}
	if ev.Result.Content == nil || ev.Result.ContentOmitted {
		t.Fatal("Fit changed its argument")
	}
	dec, err := Decode(AppendJSON(nil, &out[0]))
	if err != nil || !dec.Result.ContentOmitted || dec.Result.ContentSize != want || dec.Result.Content != nil {
		t.Fatalf("decoded %+v, %v", dec.Result, err)
	}

	// Huge meta: left out, and said so.
	ev.Result.Meta = map[string]any{"big": strings.Repeat("m", 100<<10)}
	out, lossy, err = Fit(ev, 64<<10)
	if err != nil || !lossy || out[0].Result.Meta != nil || !out[0].Result.MetaOmitted || out[0].Result.Error != "boom" {
		t.Fatalf("huge meta: %+v, lossy %v, %v", out[0].Result, lossy, err)
	}
	// Huge error text: cut, with a note of its size.
	ev.Result.Error = nastyText(200 << 10)
	out, lossy, err = Fit(ev, 64<<10)
	if err != nil || !lossy {
		t.Fatalf("huge error: lossy %v, %v", lossy, err)
	}
	checkFits(t, out, 64<<10)
	e := out[0].Result.Error
	note := fmt.Sprintf(" [cut to fit one message: %d bytes in all]", len(ev.Result.Error))
	if !strings.HasSuffix(e, note) || !strings.HasPrefix(ev.Result.Error, strings.TrimSuffix(e, note)) || len(e) < 10<<10 {
		t.Fatalf("cut error of %d bytes: ...%q", len(e), e[max(0, len(e)-80):])
	}
}

func TestFitOthers(t *testing.T) {
	big := json.RawMessage(`{"text":"` + strings.Repeat("a", 100<<10) + `"}`)
	start := &Event{Version: Version, Type: TypeStart, Session: "s", Call: "c", Start: &Start{Args: big, Index: 2}}
	out, lossy, err := Fit(start, 32<<10)
	if err != nil || !lossy || out[0].Start.Args != nil || !out[0].Start.ArgsOmitted || out[0].Start.Index != 2 {
		t.Fatalf("start: %+v, %v, %v", out, lossy, err)
	}
	for _, ev := range []*Event{
		{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Progress: &Progress{Data: big}},
		{Version: Version, Type: "groups", Session: "s", Data: big},
		{Version: Version, Type: "approval", Session: "s", Call: "c", Data: big},
	} {
		if _, _, err := Fit(ev, 32<<10); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", ev.Type, err)
		}
	}
	// A limit that leaves no room for content.
	p := Text(strings.Repeat("x", 1000))
	if _, _, err := Fit(&Event{Version: Version, Type: TypeDelta, Session: strings.Repeat("s", 200), Call: "c", Delta: &p}, 300); !errors.Is(err, ErrTooLarge) {
		t.Errorf("tiny limit: %v", err)
	}
	// What fits is returned as it is.
	small := Text("hi")
	ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Seq: 2, Delta: &small}
	if out, lossy, err := Fit(ev, 1024); err != nil || lossy || len(out) != 1 || !reflect.DeepEqual(out[0], *ev) {
		t.Fatalf("small: %+v, %v, %v", out, lossy, err)
	}
}

func TestReassemblerErrors(t *testing.T) {
	part := Part{Type: PartJSON, JSON: json.RawMessage(`{"k":"` + strings.Repeat("v", 3000) + `"}`)}
	ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Delta: &part}
	chunks, _, err := Fit(ev, 1024)
	if err != nil || len(chunks) < 4 {
		t.Fatalf("%d chunks, %v", len(chunks), err)
	}
	text := func(s string) *Event { p := Text(s); return &Event{Type: TypeDelta, Delta: &p} }
	ch := func(i int) *Event { return &chunks[i] }

	var r Reassembler
	r.Add(text("before "))
	if err := r.Add(ch(0)); err != nil || !r.Pending() {
		t.Fatalf("first chunk: %v", err)
	}
	if err := r.Add(ch(2)); err == nil || r.Pending() {
		t.Fatal("a missing chunk went unnoticed")
	}
	if got := ContentText(r.Content()); got != "before " {
		t.Fatalf("content after a broken run: %q", got)
	}
	// A run broken by a delta: the delta counts, the run is dropped.
	r.Add(ch(0))
	if err := r.Add(text("x")); err == nil || ContentText(r.Content()) != "before x" {
		t.Fatalf("a delta inside a run: %v, %q", err, ContentText(r.Content()))
	}
	// A run that starts again at 0: the new run goes on.
	r.Add(ch(0))
	if err := r.Add(ch(0)); err == nil || !r.Pending() {
		t.Fatalf("a restarted run: %v", err)
	}
	for i := 1; i < len(chunks); i++ {
		if err := r.Add(ch(i)); err != nil {
			t.Fatal(err)
		}
	}
	if c := r.Content(); len(c) != 2 || !c[1].Equal(part) {
		t.Fatalf("after the restarted run: %d parts", len(c))
	}
	// A reset drops everything, a pending run too.
	r.Add(ch(0))
	reset := text("new")
	reset.Reset = true
	if err := r.Add(reset); err != nil || r.Pending() || ContentText(r.Content()) != "new" {
		t.Fatalf("reset: %v, %q", err, ContentText(r.Content()))
	}
	// Chunks that do not make a part.
	var r2 Reassembler
	bad := &Event{Type: TypeDelta, Chunk: &Chunk{Index: 0, Count: 1, Data: `{"type":`}}
	if err := r2.Add(bad); err == nil || r2.Pending() || len(r2.Content()) != 0 {
		t.Fatalf("bad data: %v", err)
	}
	// A lone chunk from the middle.
	if err := r2.Add(ch(1)); err == nil || r2.Pending() {
		t.Fatalf("chunk 1 first: %v", err)
	}
	// Other events are ignored.
	if err := r2.Add(&Event{Type: TypeProgress, Progress: &Progress{}}); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeChunksAndOmitted(t *testing.T) {
	const head = `{"v":1,"type":"delta","session":"s","call":"c","time":"2025-01-01T00:00:00Z",`
	ev, err := Decode([]byte(head + `"chunk":{"index":0,"count":2,"data":"{\"type\""},"reset":true}`))
	if err != nil || ev.Chunk == nil || ev.Chunk.Count != 2 || ev.Chunk.Data != `{"type"` || !ev.Reset {
		t.Fatalf("%+v, %v", ev, err)
	}
	for _, bad := range []string{
		head + `"chunk":{"index":2,"count":2,"data":""}}`,
		head + `"chunk":{"index":-1,"count":2,"data":""}}`,
		head + `"chunk":{"index":0,"count":0,"data":""}}`,
		head + `"chunk":{"index":1,"count":2,"data":""},"reset":true}`,
		head + `"chunk":{"index":0,"count":1,"data":""},"delta":{"type":"text","text":"x"}}`,
		`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content":[],"content_omitted":true}}`,
		`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content_omitted":true,"content_size":-1}}`,
		`{"v":1,"type":"start","session":"s","call":"c","start":{"index":0,"args":{},"args_omitted":true}}`,
		`{"v":1,"type":"progress","session":"s","call":"c","progress":{},"chunk":{"index":0,"count":1,"data":""}}`,
	} {
		if ev, err := Decode([]byte(bad)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("Decode(%s) = %+v, %v", bad, ev, err)
		}
	}
	ev, err = Decode([]byte(`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content_omitted":true,"content_size":10,"content_parts":1,"duration_ms":1}}`))
	if err != nil || !ev.Result.ContentOmitted || ev.Result.ContentSize != 10 || ev.Result.Content != nil {
		t.Fatalf("%+v, %v", ev, err)
	}
	if got := string(AppendJSON(nil, ev)); !strings.Contains(got, `"result":{"state":"success","content_omitted":true,"content_size":10,"content_parts":1,"duration_ms":1}`) {
		t.Fatalf("re-encoded: %s", got)
	}
}

// FuzzFit: whatever the content and the limit, every piece fits, decodes,
// and the pieces rebuild the content exactly.
func FuzzFit(f *testing.F) {
	f.Add("hello \"world\" <&> 日本 \u2028 \xff", []byte(`{"a":"<b>"}`), uint16(300), uint8(0), true)
	f.Add(strings.Repeat("é", 500), []byte(`[1,2,3]`), uint16(400), uint8(1), false)
	f.Add("x", []byte{0, 1, 2, 3, 255}, uint16(350), uint8(2), true)
	f.Fuzz(func(t *testing.T, text string, raw []byte, limit uint16, kind uint8, reset bool) {
		max := int(limit)
		var part Part
		switch kind % 3 {
		case 0:
			part = Text(strings.Repeat(text, 1+int(limit)%7))
		case 1:
			if !json.Valid(raw) {
				return
			}
			part = Part{Type: PartJSON, JSON: canonicalRaw(raw)}
		case 2:
			part = Binary("application/x-"+strings.Repeat("y", int(kind%5)), bytes.Repeat(raw, 5))
		}
		if part.Type == PartText && !utf8.ValidString(part.Text) {
			// Invalid UTF-8 is replaced on the wire, as in any event.
			part.Text = strings.ToValidUTF8(part.Text, "\ufffd")
		}
		ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Seq: 1, Delta: &part, Reset: reset}
		out, lossy, err := Fit(ev, max)
		if errors.Is(err, ErrTooLarge) {
			return // a limit under the envelope's size
		}
		if err != nil || lossy {
			t.Fatalf("Fit: %v, lossy %v", err, lossy)
		}
		checkFits(t, out, max)
		got := rebuild(t, out)
		want := Concat(part)
		if !EqualContent(Concat(got...), want) {
			t.Fatalf("rebuilt %+v, want %+v", got, want)
		}
		for i, p := range out {
			if p.Reset != (reset && i == 0) {
				t.Fatalf("piece %d: reset %v", i, p.Reset)
			}
		}
	})
}

// FuzzReassembler: chunk data from anywhere never panics, and the content
// only ever grows by whole parts.
func FuzzReassembler(f *testing.F) {
	f.Add(`{"type":"text","text":"a"}`, 1, 0, `x`)
	f.Add(`{"type":"json",`, 2, 1, `"json":[1]}`)
	f.Add(`{"type":"binary","data":"!!"}`, 1, 0, ``)
	f.Fuzz(func(t *testing.T, a string, count, index int, b string) {
		var r Reassembler
		r.Add(&Event{Type: TypeDelta, Chunk: &Chunk{Index: 0, Count: count, Data: a}})
		r.Add(&Event{Type: TypeDelta, Chunk: &Chunk{Index: index, Count: count, Data: b}})
		for _, p := range r.Content() {
			if p.IsEmpty() {
				t.Fatalf("an empty part in the content: %+v", p)
			}
		}
	})
}

func BenchmarkFitText(b *testing.B) {
	part := Text(nastyText(10 << 20))
	ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Delta: &part}
	b.SetBytes(int64(len(part.Text)))
	for b.Loop() {
		if _, _, err := Fit(ev, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// TestContentSizeAsOnTheWire: a result too large for one message says the
// size of its content as the client rebuilds it from the deltas on the
// wire, where each byte of invalid UTF-8 in a text part is U+FFFD (three
// bytes) and a JSON part is written as AppendJSON writes it.
func TestContentSizeAsOnTheWire(t *testing.T) {
	// Latin-1 output of a command: é and ü as single bytes.
	text := strings.Repeat("caf\xe9 m\xfcde \xe6\x97 ", 4000)
	content := []Part{Text(text), {Type: PartJSON, JSON: json.RawMessage("{\"name\":\"M\xfcller\"}")},
		{Type: PartJSON, JSON: json.RawMessage("{not JSON <\xff>")}} // sent as a JSON string of its text
	const max = 16 << 10
	var deltas []Event
	for i := range content {
		ev := &Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Seq: uint64(i + 1), Delta: &content[i]}
		out, _, err := Fit(ev, max)
		if err != nil {
			t.Fatal(err)
		}
		deltas = append(deltas, out...)
	}
	rebuilt := rebuild(t, deltas)
	res := &Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Seq: 3,
		Result: &Result{State: StateSuccess, Content: content}}
	out, _, err := Fit(res, max)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(AppendJSON(nil, &out[0]))
	if err != nil {
		t.Fatal(err)
	}
	r := dec.Result
	if got := ContentSize(rebuilt); !r.ContentOmitted || r.ContentSize != got || r.ContentParts != len(rebuilt) {
		t.Fatalf("the result says %d parts of %d bytes, the deltas add up to %d parts of %d bytes",
			r.ContentParts, r.ContentSize, len(rebuilt), got)
	}
}

// TestRawJSONIsUTF8: a JSON value (arguments, a JSON part, progress data,
// an event's data) with invalid UTF-8 in a string goes on the wire as UTF-8,
// with U+FFFD for each bad byte as encoding/json reads it: the message is
// UTF-8, as docs/events.md promises, and a strict decoder (Python's
// json.loads, a TextDecoder with fatal set) takes it.
func TestRawJSONIsUTF8(t *testing.T) {
	raw := json.RawMessage("{\"name\":\"M\xfcller\",\"b\":\"\xe6\x97<\"}")
	part := Part{Type: PartJSON, JSON: raw}
	for _, ev := range []*Event{
		{Version: Version, Type: TypeStart, Session: "s", Call: "c", Start: &Start{Args: raw}},
		{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Progress: &Progress{Data: raw}},
		{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Delta: &part},
		{Version: Version, Type: TypeResult, Session: "s", Call: "c", Result: &Result{State: StateSuccess, Content: []Part{part}}},
		{Version: Version, Type: "groups", Session: "s", Data: raw},
	} {
		b := AppendJSON(nil, ev)
		if !utf8.Valid(b) {
			t.Fatalf("%s: not UTF-8: %q", ev.Type, b)
		}
		// What encoding/json reads from the original, it reads from the wire.
		var want, got any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		var v json.RawMessage
		switch {
		case dec.Start != nil:
			v = dec.Start.Args
		case dec.Progress != nil:
			v = dec.Progress.Data
		case dec.Delta != nil:
			v = dec.Delta.JSON
		case dec.Result != nil:
			v = dec.Result.Content[0].JSON
		default:
			v = dec.Data
		}
		if err := json.Unmarshal(v, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %q (%v), want %v", ev.Type, v, err, want)
		}
		if !utf8.Valid(v) {
			t.Fatalf("%s: Decode gives %q", ev.Type, v)
		}
	}
}
