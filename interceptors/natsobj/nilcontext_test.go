package natsobj_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/interceptors/natsobj"
)

// TestNilJetStream: New with a nil JetStream context (what
// natsbus.Bus.JetStream gives for a bus opened without WithDurable) is an
// error that says what to pass, not a panic at the first request.
func TestNilJetStream(t *testing.T) {
	_, err := natsobj.New(context.Background(), nil, "b")
	if err == nil || !strings.Contains(err.Error(), "jetstream.New(bus.Conn())") {
		t.Fatalf("New(nil): %v", err)
	}
}
