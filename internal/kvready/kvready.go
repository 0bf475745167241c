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

// probeKey is read and never written.
const probeKey = "_ready"

// Wait reads a key until the bucket answers, retrying while nobody
// responds, until ctx ends. Any other outcome ends the wait: a value or
// "not found" is an answer, and an error such as a permission the caller
// lacks on the probe key, or a read that times out, is for the bucket's
// real reads to report, not a reason to hold up opening it.
func Wait(ctx context.Context, kv jetstream.KeyValue) error {
	delay := 5 * time.Millisecond
	for {
		probe, cancel := context.WithTimeout(ctx, time.Second)
		_, err := kv.Get(probe, probeKey)
		cancel()
		if !errors.Is(err, nats.ErrNoResponders) {
			return nil
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
