package natskv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/groups/natskv"
)

// TestNilJetStream: New with a nil JetStream context (what
// natsbus.Bus.JetStream gives for a bus opened without WithDurable) is an
// error that says what to pass, not a panic at the first request.
func TestNilJetStream(t *testing.T) {
	_, err := natskv.New(context.Background(), nil, "b")
	if err == nil || !strings.Contains(err.Error(), "jetstream.New(bus.Conn())") {
		t.Fatalf("New(nil): %v", err)
	}
}
