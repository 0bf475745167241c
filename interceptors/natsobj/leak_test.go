package natsobj_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/interceptors/natsobj"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestPutsLeaveNoGoroutine: every Put runs through the object store's own
// publisher, which nats.go v1.55.0 could leave blocked for ever on a nil
// channel (its reconnect watcher read the channel after the Put had
// dropped it): a goroutine per unlucky Put, for the process's life. 200
// Puts leave no such goroutine (v1.56.0 hands the watcher its channel).
func TestPutsLeaveNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := natsobj.New(ctx, natstest.JetStream(t), "leak")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := b.Put(ctx, fmt.Sprintf("r%d", i), []byte("a result")); err != nil {
			t.Fatal(err)
		}
	}
	stuck := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 8<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		stuck = strings.Count(stacks, "resetPendingAcksOnReconnect")
		if stuck == 0 || time.Now().After(deadline) {
			break
		}
	}
	if stuck != 0 {
		t.Fatalf("%d goroutines of the object store's publisher are left after 200 Puts", stuck)
	}
}
