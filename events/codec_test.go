package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// nastyStrings break naive JSON encoders.
func nastyStrings() []string {
	var ctl strings.Builder
	for c := range 0x20 {
		ctl.WriteByte(byte(c))
	}
	ctl.WriteByte(0x7f)
	return []string{
		"",
		"plain",
		`"quoted" \back\slash\ /slash`,
		ctl.String(),
		"<script>alert('x') && 1 > 0</script>",
		"\u2028\u2029 line separators",
		"emoji 😀👍🏽 and CJK 日本語 and e\u0301",
		"\xff\xfe invalid \xc3 UTF-8 \xed\xa0\x80 surrogate \xc0\x80 overlong \xf4\x90\x80\x80 too big",
		"trailing partial \xe2\x80",
		"\ufffd literal replacement char",
		strings.Repeat("long text with \"quotes\" and \n newlines; ", 5000),
	}
}

func nastyRaws() []json.RawMessage {
	return []json.RawMessage{
		nil,
		json.RawMessage(`{"a":1,"b":[true,false,null],"c":"x"}`),
		json.RawMessage(`  { "spaced" : [ 1 , 2 ] , "s" : "in string  spaces" }  `),
		json.RawMessage("\n[1,\t2]\r\n"),
		json.RawMessage(`"<b>&amp;</b>"`),
		json.RawMessage("\"\u2028\u2029\""),
		json.RawMessage(`"\"<\\"`),
		json.RawMessage(`null`),
		json.RawMessage(`-12.5e+3`),
		json.RawMessage("\"invalid \xff UTF-8 kept\""),
		json.RawMessage(`{"nested":{"deep":[{"x":"\u00e9\n"}]}}`),
	}
}

func nastyTimes() []time.Time {
	return []time.Time{
		{},
		time.Now(), // with a monotonic reading and time.Local
		time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.UTC),
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("IST", 5*3600+1800)),
		time.Date(2024, 1, 1, 0, 0, 0, 100, time.FixedZone("", -7*3600)),
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("odd", 3600+59)), // offset with seconds
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 6, 1, 12, 0, 0, 0, time.Local),
	}
}

func nastyFloats() []float64 {
	return []float64{
		0, math.Copysign(0, -1), 0.42, 1, -1, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 5e-324, 1e20, 1e21, 123456789.123,
		-1e21, math.MaxFloat64, -math.SmallestNonzeroFloat64, 1e100, 12345.678e-20,
	}
}

// testEvents returns events of every type, with empty and full bodies and
// nasty strings in every string field.
func testEvents() []*Event {
	ts := time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC)
	frac := 0.42
	zero := 0.0
	var evs []*Event
	base := func(typ Type) *Event {
		return &Event{Version: Version, Type: typ, Session: "conv-42", Agent: "researcher", Call: "call_abc123", Tool: "count_lines", Seq: 17, Time: ts}
	}
	// Envelopes with empty bodies.
	evs = append(evs,
		&Event{},
		&Event{Version: Version, Type: TypeStart, Session: "s", Call: "c", Start: &Start{}},
		&Event{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Progress: &Progress{}},
		&Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Delta: &Part{}},
		&Event{Version: Version, Type: TypeSuspend, Session: "s", Call: "c", Suspend: &Suspend{}},
		&Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Result: &Result{}},
		&Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Result: &Result{Content: []Part{}}},
		&Event{Version: Version, Type: "groups", Session: "s"},
		&Event{Version: -5, Type: "x", Seq: math.MaxUint64},
	)
	// Full bodies.
	meta := map[string]any{"z": 1, "a": []any{"x", 2.5, nil, true}, "<html>": "&", "m": map[string]int{"b": 2, "a": 1}}
	ev := base(TypeStart)
	ev.Start = &Start{Args: json.RawMessage(`{"path":"/tmp/x","n":3}`), Index: 2}
	evs = append(evs, ev)
	ev = base(TypeProgress)
	ev.Progress = &Progress{Message: "counted 1200 of 2857 lines so far, ok", Fraction: &frac, Data: json.RawMessage(`{"lines":1200}`), Dropped: 3}
	evs = append(evs, ev)
	ev = base(TypeProgress)
	ev.Progress = &Progress{Fraction: &zero}
	evs = append(evs, ev)
	ev = base(TypeDelta)
	d := Text(strings.Repeat("x", 200))
	ev.Delta = &d
	evs = append(evs, ev)
	ev = base(TypeDelta)
	ev.Delta = &Part{Type: PartBinary, Data: []byte{0, 1, 2, 0xff, 0xfe}, MediaType: "image/png"}
	evs = append(evs, ev)
	ev = base(TypeSuspend)
	ev.Suspend = &Suspend{Reason: "approval"}
	evs = append(evs, ev)
	ev = base(TypeResult)
	ev.Result = &Result{
		State:      StateError,
		Content:    []Part{Text("a"), {Type: PartJSON, JSON: json.RawMessage(`[1,2]`)}, Binary("", []byte("bin")), {}},
		Error:      "boom",
		DurationMS: 12.5,
		Meta:       meta,
		Dropped:    7,
		Err:        errors.New("not encoded"),
	}
	evs = append(evs, ev)
	ev = base(TypeResult)
	ev.Result = &Result{State: StateSuccess, ContentOmitted: true, ContentSize: 3 << 20, ContentParts: 1, MetaOmitted: true, Dropped: math.MaxUint64}
	evs = append(evs, ev)
	ev = base(TypeResult)
	ev.Result = &Result{State: StateSuccess, Meta: map[string]any{}}
	evs = append(evs, ev)
	// Every field once with every nasty string, raw value, time and float.
	for _, s := range nastyStrings() {
		evs = append(evs,
			&Event{Version: Version, Type: Type(s), Session: s, Agent: s, Call: s, Tool: s, Time: ts, Start: &Start{}},
			&Event{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Progress: &Progress{Message: s}},
			&Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Delta: &Part{Type: PartType(s), Text: s, MediaType: s, Data: []byte(s)}},
			&Event{Version: Version, Type: TypeSuspend, Session: "s", Call: "c", Suspend: &Suspend{Reason: s}},
			&Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Result: &Result{State: State(s), Error: s, Content: []Part{Text(s)}, Meta: map[string]any{s: s}}},
		)
	}
	for _, r := range nastyRaws() {
		evs = append(evs,
			&Event{Version: Version, Type: TypeStart, Session: "s", Call: "c", Start: &Start{Args: r, Index: -1}},
			&Event{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Progress: &Progress{Data: r}},
			&Event{Version: Version, Type: TypeDelta, Session: "s", Call: "c", Delta: &Part{Type: PartJSON, JSON: r}},
			&Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Result: &Result{Content: []Part{{Type: PartJSON, JSON: r}, Text("x")}}},
		)
	}
	for _, tm := range nastyTimes() {
		evs = append(evs, &Event{Version: Version, Type: "groups", Session: "s", Time: tm})
	}
	for _, f := range nastyFloats() {
		evs = append(evs,
			&Event{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Progress: &Progress{Fraction: &f}},
			&Event{Version: Version, Type: TypeResult, Session: "s", Call: "c", Result: &Result{DurationMS: f}},
		)
	}
	return evs
}

// unmarshal decodes with encoding/json alone.
func unmarshal(t testing.TB, data []byte) *Event {
	t.Helper()
	ev := new(Event)
	if err := json.Unmarshal(data, ev); err != nil {
		t.Fatalf("json.Unmarshal: %v\n%.400s", err, data)
	}
	return ev
}

func TestAppendJSONMatchesMarshal(t *testing.T) {
	buf := []byte("prefix that must be kept")
	for i, ev := range testEvents() {
		want, err := marshalWire(ev)
		if err != nil {
			t.Fatalf("event %d: json.Marshal: %v", i, err)
		}
		out := AppendJSON(buf[:24], ev)
		if string(out[:24]) != "prefix that must be kept" {
			t.Fatalf("event %d: dst clobbered", i)
		}
		got := out[24:]
		if !json.Valid(got) {
			t.Fatalf("event %d: invalid JSON %.400s", i, got)
		}
		if !reflect.DeepEqual(unmarshal(t, got), unmarshal(t, want)) {
			t.Fatalf("event %d: decodes differently\nAppendJSON   %.400s\njson.Marshal %.400s", i, got, want)
		}
		// Stronger than required: the very same bytes.
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d: bytes differ\nAppendJSON   %.400s\njson.Marshal %.400s", i, got, want)
		}
		if err := checkDecoded(ev); err == nil {
			d1, err1 := Decode(got)
			d2, err2 := Decode(want)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(d1, d2) {
				t.Fatalf("event %d: Decode: %v, %v; %+v vs %+v", i, err1, err2, d1, d2)
			}
		}
	}
}

// TestAppendJSONKnowsAllFields fails when a serialized field is added to the
// event types without teaching AppendJSON about it.
func TestAppendJSONKnowsAllFields(t *testing.T) {
	known := map[reflect.Type]string{
		reflect.TypeFor[Event]():    "v type session agent,omitempty call,omitempty tool,omitempty seq,omitempty time start,omitempty progress,omitempty delta,omitempty chunk,omitempty reset,omitempty suspend,omitempty result,omitempty data,omitempty",
		reflect.TypeFor[Start]():    "args,omitempty index args_omitted,omitempty",
		reflect.TypeFor[Chunk]():    "index count data",
		reflect.TypeFor[Progress](): "message,omitempty fraction,omitempty data,omitempty dropped,omitempty",
		reflect.TypeFor[Part]():     "type text,omitempty json,omitempty data,omitempty media_type,omitempty",
		reflect.TypeFor[Suspend]():  "reason",
		reflect.TypeFor[Result]():   "state content content_omitted,omitempty content_size,omitempty content_parts,omitempty error,omitempty duration_ms meta,omitempty meta_omitted,omitempty dropped,omitempty",
	}
	for typ, want := range known {
		var tags []string
		for f := range typ.Fields() {
			if tag := f.Tag.Get("json"); tag != "-" {
				tags = append(tags, tag)
			}
		}
		if got := strings.Join(tags, " "); got != want {
			t.Errorf("%v fields %q; AppendJSON writes %q", typ, got, want)
		}
	}
}

// TestAppendJSONWhereMarshalFails checks that the output stays valid JSON for
// events json.Marshal rejects.
func TestAppendJSONWhereMarshalFails(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(-1)
	ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		ev   *Event
		want string
	}{
		// (A part's JSON that is not valid fails json.Marshal no more: Part
		// marshals through the same encoder.)
		{&Event{Version: 1, Type: TypeStart, Session: "s", Call: "c", Time: ts, Start: &Start{Args: json.RawMessage(`{"path": "/x"`)}},
			`{"v":1,"type":"start","session":"s","call":"c","time":"2025-01-01T00:00:00Z","start":{"args":"{\"path\": \"/x\"","index":0}}`},
		{&Event{Version: 1, Type: TypeProgress, Session: "s", Call: "c", Time: ts, Progress: &Progress{Fraction: &nan, Data: json.RawMessage(`{}{}`)}},
			`{"v":1,"type":"progress","session":"s","call":"c","time":"2025-01-01T00:00:00Z","progress":{"fraction":null,"data":"{}{}"}}`},
		{&Event{Version: 1, Type: TypeResult, Session: "s", Call: "c", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Result: &Result{DurationMS: inf, Meta: map[string]any{"c": make(chan int)}}},
			`{"v":1,"type":"result","session":"s","call":"c","time":null,"result":{"state":"","content":[],"duration_ms":null}}`},
		{&Event{Version: 1, Type: "x", Session: "s", Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
			`{"v":1,"type":"x","session":"s","time":null}`},
		{&Event{Version: 1, Type: "x", Session: "s", Time: time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))},
			`{"v":1,"type":"x","session":"s","time":null}`},
	}
	for i, tt := range tests {
		if _, err := json.Marshal(tt.ev); err == nil {
			t.Fatalf("case %d: json.Marshal succeeded", i)
		}
		got := AppendJSON(nil, tt.ev)
		if string(got) != tt.want || !json.Valid(got) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, tt.want)
		}
		unmarshal(t, got)
	}
}

func TestAppendJSONAllocs(t *testing.T) {
	frac := 0.42
	progress := &Event{Version: 1, Type: TypeProgress, Session: "conv-42", Call: "call_abc123", Tool: "count_lines", Seq: 17, Time: time.Now(),
		Progress: &Progress{Message: "counted 1200 of 2857 lines so far, ok", Fraction: &frac, Data: json.RawMessage(`{"lines":1200}`)}}
	buf := AppendJSON(nil, progress)
	if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], progress) }); n != 0 {
		t.Errorf("AppendJSON into a reused buffer: %v allocs", n)
	}
}

func TestDecode(t *testing.T) {
	const head = `{"v":1,"session":"s","call":"c","time":"2025-01-01T00:00:00Z",`
	// Unknown fields and types pass.
	ev, err := Decode([]byte(`{"v":1,"type":"groups","session":"s","future":{"x":[1,2]},"groups":[{"id":"g"}]}`))
	if err != nil || ev.Type != "groups" || ev.Session != "s" || ev.Call != "" {
		t.Fatalf("unknown type: %+v, %v", ev, err)
	}
	ev, err = Decode([]byte(head + `"type":"delta","delta":{"type":"text","text":"hi","extra":1},"x-trace":"abc"}`))
	if err != nil || ev.Delta.Text != "hi" || ev.Time != time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("unknown fields: %+v, %v", ev, err)
	}
	ev, err = Decode([]byte(`{"v":1,"type":"approval","session":"s","call":"c"}`))
	if err != nil || ev.Call != "c" {
		t.Fatalf("unknown per-call type: %+v, %v", ev, err)
	}

	tests := []struct{ in, msg string }{
		{``, `events: invalid event: unexpected end of JSON input`},
		{`{"v":1,`, `events: invalid event: unexpected end of JSON input`},
		{`nope`, `events: invalid event: invalid character 'o' in literal null (expecting 'u')`},
		{`{"v":1,"type":"x","session":"s"} {}`, `events: invalid event: invalid character '{' after top-level value`},
		{`[]`, `events: invalid event: json: cannot unmarshal array into Go value of type events.Event`},
		{`null`, `events: invalid event: version 0 (missing "v"?)`},
		{`{}`, `events: invalid event: version 0 (missing "v"?)`},
		{`{"type":"x","session":"s"}`, `events: invalid event: version 0 (missing "v"?)`},
		{`{"v":-1,"type":"x","session":"s"}`, `events: invalid event: version -1 (missing "v"?)`},
		{`{"v":"1","type":"x","session":"s"}`, `events: invalid event: json: cannot unmarshal string into Go struct field Event.v of type int`},
		{`{"v":2,"type":"x","session":"s"}`, `events: unsupported newer event version 2 (this package reads version 1)`},
		{`{"v":2,"type":7,"seq":"x","time":"then"}`, `events: unsupported newer event version 2 (this package reads version 1)`},
		{`{"v":1,"session":"s"}`, `events: invalid event: empty type`},
		{`{"v":1,"type":"","session":"s"}`, `events: invalid event: empty type`},
		{`{"v":1,"type":"x"}`, `events: invalid event: empty session`},
		{`{"v":1,"type":"start","session":"s","start":{}}`, `events: invalid event: "start" event without a call id`},
		{`{"v":1,"type":"result","session":"s","call":"","result":{}}`, `events: invalid event: "result" event without a call id`},
		{head + `"type":"start"}`, `events: invalid event: "start" event without a "start" body`},
		{head + `"type":"start","start":null}`, `events: invalid event: "start" event without a "start" body`},
		{head + `"type":"progress","delta":{}}`, `events: invalid event: "progress" event without a "progress" body`},
		{head + `"type":"delta","delta":{},"result":{}}`, `events: invalid event: "delta" event with a "result" body`},
		{head + `"type":"suspend","suspend":{},"start":{}}`, `events: invalid event: "suspend" event with a "start" body`},
		{head + `"type":"result"}`, `events: invalid event: "result" event without a "result" body`},
		{head + `"type":"groups","progress":{}}`, `events: invalid event: "groups" event with a "progress" body`},
		{head + `"type":"start","start":{"index":"0"}}`, `events: invalid event: json: cannot unmarshal string into Go struct field Start.start.index of type int`},
		{head + `"type":"x","seq":-1}`, `events: invalid event: json: cannot unmarshal number -1 into Go struct field Event.seq of type uint64`},
		{`{"v":1,"type":"x","session":"s","time":"2025-01-01"}`, `events: invalid event: parsing time "2025-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"`},
		{head + `"type":"delta","delta":{"data":"!"}}`, `events: invalid event: illegal base64 data at input byte 0`},
	}
	for _, tt := range tests {
		ev, err := Decode([]byte(tt.in))
		if err == nil {
			t.Errorf("Decode(%s) = %+v, want an error", tt.in, ev)
			continue
		}
		if err.Error() != tt.msg {
			t.Errorf("Decode(%s):\n got %s\nwant %s", tt.in, err, tt.msg)
		}
		wantIs := ErrInvalidEvent
		if strings.Contains(tt.msg, "newer") {
			wantIs = ErrNewerVersion
		}
		if !errors.Is(err, wantIs) {
			t.Errorf("Decode(%s): %v does not wrap %v", tt.in, err, wantIs)
		}
	}
}

func TestDecodeNormalizes(t *testing.T) {
	in := `{"v":1,"type":"result","session":"s","call":"c","time":"2025-01-01T00:00:00+00:00",` +
		`"result":{"state":"success","content":[{"type":"json","json":{ "a" : "<b>" }},{"type":"binary","data":""}],"duration_ms":1,"meta":{}}}`
	ev, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	r := ev.Result
	if ev.Time.Location() != time.UTC || string(r.Content[0].JSON) != `{"a":"\u003cb\u003e"}` || r.Content[1].Data != nil || r.Meta != nil {
		t.Fatalf("not normalized: %+v %+v", ev, r)
	}
	ev2, err := Decode(AppendJSON(nil, ev))
	if err != nil || !reflect.DeepEqual(ev, ev2) {
		t.Fatalf("round trip: %+v, %v", ev2, err)
	}
}

// encodeCases are the events of BenchmarkEncode.
func encodeCases() []struct {
	name string
	ev   *Event
} {
	frac := 0.42
	ts := time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)
	delta := Text(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)[:200])
	return []struct {
		name string
		ev   *Event
	}{
		{"progress", &Event{Version: Version, Type: TypeProgress, Session: "conv-42", Call: "call_abc123", Tool: "count_lines", Seq: 17, Time: ts,
			Progress: &Progress{Message: "counted 1200 of 2857 lines in src/ so far", Fraction: &frac}}},
		{"delta", &Event{Version: Version, Type: TypeDelta, Session: "conv-42", Call: "call_abc123", Tool: "count_lines", Seq: 18, Time: ts, Delta: &delta}},
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range encodeCases() {
		b.Run(c.name+"/AppendJSON", func(b *testing.B) {
			b.ReportAllocs()
			buf := AppendJSON(nil, c.ev)
			start := time.Now()
			for b.Loop() {
				buf = AppendJSON(buf[:0], c.ev)
			}
			appendNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			// json.Marshal on the same event right after, for the ratio.
			start = time.Now()
			for range b.N {
				if _, err := json.Marshal(c.ev); err != nil {
					b.Fatal(err)
				}
			}
			marshalNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.ReportMetric(marshalNs/appendNs, "x-faster-than-Marshal")
			b.SetBytes(int64(len(buf)))
		})
		b.Run(c.name+"/json.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				out, err := json.Marshal(c.ev)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.SetBytes(int64(n))
		})
	}
}

func ExampleAppendJSON() {
	frac := 0.5
	ev := &Event{Version: Version, Type: TypeProgress, Session: "conv-42", Call: "call_1", Seq: 2,
		Time: time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.UTC), Progress: &Progress{Message: "half <done>", Fraction: &frac}}
	fmt.Printf("%s\n", AppendJSON(nil, ev))
	// Output: {"v":1,"type":"progress","session":"conv-42","call":"call_1","seq":2,"time":"2025-01-02T03:04:05.6Z","progress":{"message":"half \u003cdone\u003e","fraction":0.5}}
}

// TestSessionLevelEvent: a session-level event (no call, a type of a later
// issue, a data body) survives the codec.
func TestSessionLevelEvent(t *testing.T) {
	ts := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev := &Event{Version: Version, Type: "groups", Session: "conv-1", Seq: 3, Time: ts,
		Data: json.RawMessage(`{"active":["files"],"by":"model"}`)}
	b := AppendJSON(nil, ev)
	want := `{"v":1,"type":"groups","session":"conv-1","seq":3,"time":"2026-11-29T12:00:00Z","data":{"active":["files"],"by":"model"}}`
	if string(b) != want {
		t.Fatalf("\n got %s\nwant %s", b, want)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ev) {
		t.Fatalf("round trip: %+v", got)
	}
	if s := (Subjects{}).Event(ev); s != "toolstream.conv-1._.groups" {
		t.Fatalf("subject %s", s)
	}
}

// TestDecodeTraceFields: the trace fields an SSE frame carries become the
// event's Trace; a "traceparent" anywhere but at the top is not one.
func TestDecodeTraceFields(t *testing.T) {
	const head = `{"v":1,"type":"progress","session":"s","call":"c","progress":{"message":"m","fraction":0.5}`
	for body, want := range map[string]*TraceContext{
		head + `,"traceparent":"00-a-b-01","tracestate":"k=v"}`: {Parent: "00-a-b-01", State: "k=v"},
		`{"traceparent":"00-a-b-01",` + head[1:] + `}`:          {Parent: "00-a-b-01"},
		head + `}`: nil,
		`{"v":1,"type":"groups","session":"s","data":{"traceparent":"00-a-b-01"}}`: nil,
	} {
		ev, err := Decode([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		switch {
		case want == nil && ev.Trace != nil:
			t.Errorf("%s: trace %+v, want none", body, ev.Trace)
		case want != nil && (ev.Trace == nil || ev.Trace.TraceParent() != want.Parent || ev.Trace.TraceState() != want.State):
			t.Errorf("%s: trace %+v, want %+v", body, ev.Trace, want)
		}
	}
}

// marshalWire is json.Marshal(v) as AppendJSON writes it: invalid UTF-8,
// which json.Marshal copies from a json.RawMessage as it is, becomes
// \ufffd (the wire is UTF-8).
func marshalWire(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err == nil && !utf8.Valid(b) {
		b = replaceInvalidUTF8(b)
	}
	return b, err
}
