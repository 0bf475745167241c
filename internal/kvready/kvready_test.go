package kvready_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/internal/kvready"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestWaitWhileNobodyResponds: Wait returns at once for a bucket that
// answers; for one nobody answers for (its stream is gone), it waits until
// the bucket answers again, and fails clearly if ctx ends first.
func TestWaitWhileNobodyResponds(t *testing.T) {
	js := natstest.JetStream(t)
	ctx := context.Background()
	cfg := jetstream.KeyValueConfig{Bucket: "READY", Storage: jetstream.MemoryStorage}
	kv, err := js.CreateKeyValue(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := kvready.Wait(ctx, kv); err != nil {
		t.Fatalf("a bucket that answers: %v", err)
	}

	if err := js.DeleteKeyValue(ctx, "READY"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "k"); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("reading a deleted bucket: %v, want no responders (what Wait waits through)", err)
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	err = kvready.Wait(short, kv)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "no responders") {
		t.Fatalf("waiting past ctx for a bucket nobody answers for: %v", err)
	}

	back := time.AfterFunc(200*time.Millisecond, func() { _, _ = js.CreateKeyValue(ctx, cfg) })
	defer back.Stop()
	start := time.Now()
	long, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := kvready.Wait(long, kv); err != nil {
		t.Fatalf("waiting for the bucket to come back: %v", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("Wait returned after %v, before the bucket was back", took)
	}
}
