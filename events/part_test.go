package events

import (
	"encoding/json"
	"testing"
)

func TestAppendPart(t *testing.T) {
	j, err := JSON(map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	got := Concat(Text("a"), Text(""), Text("b"), j, Text("c"), Binary("", nil), Text("d"), Binary("image/png", []byte{1}))
	want := []Part{Text("ab"), j, Text("cd"), {Type: PartBinary, Data: []byte{1}, MediaType: "image/png"}}
	if len(got) != len(want) {
		t.Fatalf("got %d parts %+v, want %+v", len(got), got, want)
	}
	for i := range got {
		if got[i].Type != want[i].Type || got[i].Text != want[i].Text || string(got[i].JSON) != string(want[i].JSON) || string(got[i].Data) != string(want[i].Data) {
			t.Errorf("part %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A JSON or binary part is set off by newlines: never glued to text or
	// to another value.
	if s := ContentText(got); s != "ab\n{\"n\":1}\ncd\n[binary image/png, 1 bytes]" {
		t.Fatalf("ContentText %q", s)
	}
	if s := ContentText([]Part{j, j, Text("")}); s != "{\"n\":1}\n{\"n\":1}" {
		t.Fatalf("ContentText of two values %q", s)
	}
	if _, err := JSON(make(chan int)); err == nil {
		t.Fatal("JSON of a channel succeeded")
	}
	if Binary("", []byte{1}).MediaType != "application/octet-stream" {
		t.Fatal("default media type")
	}
}

func TestStateIsError(t *testing.T) {
	for s, want := range map[State]bool{StateSuccess: false, StateSuspended: false, StateError: true, StateDenied: true, StateInterrupted: true, StateTimeout: true} {
		if s.IsError() != want {
			t.Errorf("%s.IsError() = %v", s, !want)
		}
	}
}

// TestEventJSON pins the wire names of the envelope: consumers in other
// languages depend on them.
func TestEventJSON(t *testing.T) {
	f := 0.5
	ev := Event{Version: Version, Type: TypeProgress, Session: "s", Call: "c", Tool: "t", Seq: 2,
		Progress: &Progress{Message: "m", Fraction: &f, Dropped: 3}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"type":"progress","session":"s","call":"c","tool":"t","seq":2,"time":"0001-01-01T00:00:00Z","progress":{"message":"m","fraction":0.5,"dropped":3}}`
	if string(b) != want {
		t.Fatalf("\n got %s\nwant %s", b, want)
	}
	r := Event{Type: TypeResult, Result: &Result{State: StateError, Content: []Part{Text("Error: x")}, Error: "x", Err: json.Unmarshal([]byte("{"), new(any))}}
	b, _ = json.Marshal(r.Result)
	if string(b) != `{"state":"error","content":[{"type":"text","text":"Error: x"}],"error":"x","duration_ms":0}` {
		t.Fatalf("result body %s", b)
	}
}
