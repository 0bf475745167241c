// Package kvready waits for a JetStream key-value bucket to answer reads.
//
// A bucket's reads are direct gets, answered by the servers that keep its
// stream. Right after the bucket is created on a cluster, the other
// servers may not yet know who answers, and a read fails with "no
// responders" for a moment. The packages that open a bucket wait for that
// moment to pass, so that their first read and write succeed.
package kvready

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// probeKey is read and never written: "not found" means the bucket answers.
const probeKey = "_ready"

// Wait reads a key until the bucket answers (a value or "not found"),
// retrying while nobody responds, until ctx ends.
func Wait(ctx context.Context, kv jetstream.KeyValue) error {
	delay := 5 * time.Millisecond
	for {
		_, err := kv.Get(ctx, probeKey)
		if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("bucket %s does not answer reads yet (no responders): %w", kv.Bucket(), context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}
