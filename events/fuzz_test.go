package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func FuzzDecode(f *testing.F) {
	for _, ev := range testEvents() {
		if b := AppendJSON(nil, ev); len(b) < 2048 {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"v":1,"type":"groups","session":"s","future":[1,{"a":null}]}`))
	f.Add([]byte(`{"V":1,"TYPE":"delta","Session":"s","call":"c","delta":{"type":"text","data":"","json":[ 1 ]},"time":"2025-01-01T00:00:00+00:00"}`))
	f.Add([]byte(`{"v":1,"type":"result","session":"s","call":"c","result":{"content":[],"meta":{"a":{}},"duration_ms":1e300}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content":[],"duration_ms":1,"dropped":3}}`))
	f.Add([]byte(`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content_omitted":true,"content_size":9,"content_parts":1,"duration_ms":0,"dropped":0}}`))
	f.Add([]byte(`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content":[],"duration_ms":1,"dropped":-1}}`))
	f.Add([]byte(`{"v":1,"type":"result","session":"s","call":"c","result":{"state":"success","content":[],"duration_ms":1,"dropped":1e3}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			if ev != nil {
				t.Fatal("an event with an error")
			}
			return
		}
		out := AppendJSON(nil, ev)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q", out)
		}
		want, err := marshalWire(ev)
		if err != nil {
			t.Fatalf("json.Marshal of a decoded event: %v", err)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("bytes differ\nAppendJSON   %q\njson.Marshal %q", out, want)
		}
		ev2, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode(AppendJSON(ev)): %v\n%q", err, out)
		}
		if !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("round trip differs\n%#v\n%#v\n%q", ev, ev2, out)
		}
	})
}

func FuzzTokenCodec(f *testing.F) {
	for _, id := range nastyIDs() {
		f.Add(id, EncodeToken(id))
	}
	f.Add("~YQ", "~Xx")
	f.Add("a", "~X\nw")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, id := range []string{a, b} {
			tok := EncodeToken(id)
			checkToken(t, tok)
			if got, err := decodeTokenErr(tok); err != nil || got != id {
				t.Fatalf("decodeTokenErr(EncodeToken(%q)) = %q, %v", id, got, err)
			}
			// Arbitrary input: no panic, and only canonical tokens pass.
			if got, err := decodeTokenErr(id); err == nil && EncodeToken(got) != id {
				t.Fatalf("decodeTokenErr(%q) = %q, which encodes as %q", id, got, EncodeToken(got))
			}
		}
		var s Subjects
		for _, call := range []string{b, ""} {
			subj := s.Call(a, call, "start")
			if gs, gc, gt, err := s.Parse(subj); err != nil || gs != a || gc != call || gt != TypeStart {
				t.Fatalf("Parse(%q) = %q, %q, %q, %v", subj, gs, gc, gt, err)
			}
			if match(s.Session(b), subj) != (a == b) || !match(s.Session(a), subj) {
				t.Fatalf("session %q event %q vs Session(%q) = %q", a, subj, b, s.Session(b))
			}
		}
		s.Parse(a) // arbitrary subjects: no panic
	})
}

func FuzzAppendJSON(f *testing.F) {
	f.Add(uint8(0), "conv-42", "call_abc123", "count_lines", "hello", []byte(`{"a":1}`), []byte{1, 2}, uint64(17), 1, int64(1700000000), int64(5), 3600, 0.42, 12.5, 2)
	f.Add(uint8(1), "a.>", "*", "", "\xff\u2028<&>\x00\"\\", []byte(" [1, 2] "), []byte(nil), uint64(0), 0, int64(-62135596800), int64(0), 0, 1e-7, 1e21, -1)
	f.Add(uint8(2), "", "", "t", "", []byte("{bad"), []byte(""), uint64(1), -3, int64(253402300800), int64(-1), -86400, -0.0, 5e-324, 0)
	f.Add(uint8(4), "s", "c", "t", "x", []byte("\"\xff\""), []byte("d"), uint64(1<<63), 1, int64(0), int64(999999999), 59, 1e300, -1e-300, 1<<30)
	f.Fuzz(func(t *testing.T, kind uint8, session, call, text, str string, raw, data []byte, seq uint64, version int, sec, nsec int64, offset int, f1, f2 float64, index int) {
		ev := &Event{Version: version, Type: Type(str), Session: session, Call: call, Tool: text, Seq: seq,
			Time: time.Unix(sec, nsec).In(time.FixedZone(str, offset))}
		switch kind % 7 {
		case 0:
			ev.Type, ev.Start = TypeStart, &Start{Args: raw, Index: index}
		case 1:
			ev.Type, ev.Progress = TypeProgress, &Progress{Message: text, Fraction: &f1, Data: raw, Dropped: seq}
		case 2:
			ev.Type, ev.Delta = TypeDelta, &Part{Type: PartType(str), Text: text, JSON: raw, Data: data, MediaType: str}
		case 3:
			ev.Type, ev.Suspend = TypeSuspend, &Suspend{Reason: text}
		case 4:
			ev.Type, ev.Result = TypeResult, &Result{State: State(str), Error: text, DurationMS: f2,
				Content: []Part{Text(text), {Type: PartJSON, JSON: raw}, Binary(str, data)}, Meta: map[string]any{str: f1, text: string(data)}, Dropped: seq}
		case 5:
			ev.Result = &Result{}
			ev.Progress = &Progress{}
		}
		out := AppendJSON(nil, ev)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q", out)
		}
		got := unmarshal(t, out)
		want, err := marshalWire(ev)
		if err != nil {
			return // AppendJSON stays valid where json.Marshal fails, checked above
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("bytes differ\nAppendJSON   %q\njson.Marshal %q", out, want)
		}
		if !reflect.DeepEqual(got, unmarshal(t, want)) {
			t.Fatalf("decodes differently: %q", out)
		}
		if ev.Version > Version || checkDecoded(ev) != nil {
			return
		}
		dec, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode: %v\n%q", err, out)
		}
		dec2, err := Decode(AppendJSON(nil, dec))
		if err != nil || !reflect.DeepEqual(dec, dec2) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, dec, dec2)
		}
	})
}
