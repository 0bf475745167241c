package telemetry

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// TestNilTelemetryTracesNothing: a toolkit given a nil *Telemetry (a New
// that failed, its error not checked) runs its calls untraced. Before the
// hook was taken through Tracehook, the first batch panicked on the nil
// pointer.
func TestNilTelemetryTracesNothing(t *testing.T) {
	var tel *Telemetry
	tk := toolkit.New(toolkit.WithTracer(tel))
	defer tk.Close(context.Background())
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "echo", Description: "Echoes."}, json.RawMessage(`{"type":"object"}`),
		func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
			return []events.Part{events.Text("ok")}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	s, err := tk.Session("s")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run(context.Background(), []toolkit.Call{{ID: "1", Name: "echo", Args: json.RawMessage(`{}`)}})[0]
	if r.State != events.StateSuccess || r.Text() != "ok" {
		t.Fatalf("the call ended %s %q", r.State, r.Text())
	}
}
