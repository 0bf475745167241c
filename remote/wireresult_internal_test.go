package remote

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolstream/toolstream/events"
)

// TestWireResultJSONMatchesReflection: the hand-written encoding of a result
// frame decodes to what encoding/json's own does, whatever the text holds.
func TestWireResultJSONMatchesReflection(t *testing.T) {
	type plain wireResult // without the method
	for _, wr := range []wireResult{
		{State: "success", Content: []events.Part{events.Text("a\u2028<b>\"é"), {Type: events.PartJSON, JSON: json.RawMessage(`{"x":1}`)}, events.Binary("image/png", []byte{1, 2, 3})}},
		{State: "error", Content: []events.Part{}, Error: "boom\n\x01", Timeout: true, Transient: true, Meta: map[string]any{"k": []int{1}}, NotRun: true},
		{State: "success", Omitted: true, MetaOmitted: true},
	} {
		got, err := json.Marshal(wr)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain(wr))
		var g, w plain
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	}
}
