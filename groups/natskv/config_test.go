package natskv_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestNewKeepsTheBucketsConfig: New opens a bucket that exists as it is. It
// used to apply its own configuration to it: a second process calling New
// without WithReplicas scaled a bucket kept on three servers down to one
// (the state no longer survived the loss of a server, and nothing said
// so), and every New dropped a TTL or history the operator had set.
// WithReplicas, given, still sets the replicas.
func TestNewKeepsTheBucketsConfig(t *testing.T) {
	js := natstest.NewCluster(t, 3).JetStream(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	config := func() jetstream.StreamConfig {
		t.Helper()
		kv, err := js.KeyValue(ctx, "KEEP")
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	}
	if _, err := natskv.New(ctx, js, "KEEP", natskv.WithReplicas(3)); err != nil {
		t.Fatal(err)
	}
	if c := config(); c.Replicas != 3 || c.MaxMsgsPerSubject != 1 {
		t.Fatalf("a new bucket: replicas %d, history %d", c.Replicas, c.MaxMsgsPerSubject)
	}
	st, err := natskv.New(ctx, js, "KEEP")
	if err != nil {
		t.Fatal(err)
	}
	if c := config(); c.Replicas != 3 {
		t.Errorf("after New without WithReplicas on a bucket kept on 3 servers: replicas %d", c.Replicas)
	}
	if _, err := js.UpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "KEEP", History: 5, TTL: time.Hour, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := natskv.New(ctx, js, "KEEP"); err != nil {
		t.Fatal(err)
	}
	if c := config(); c.MaxAge != time.Hour || c.MaxMsgsPerSubject != 5 || c.Replicas != 3 {
		t.Errorf("after New on a bucket an operator gave a TTL and history: TTL %v, history %d, replicas %d", c.MaxAge, c.MaxMsgsPerSubject, c.Replicas)
	}
	if _, err := natskv.New(ctx, js, "KEEP", natskv.WithReplicas(1)); err != nil {
		t.Fatal(err)
	}
	if c := config(); c.Replicas != 1 || c.MaxAge != time.Hour {
		t.Errorf("after New with WithReplicas(1): replicas %d, TTL %v", c.Replicas, c.MaxAge)
	}
	// The store still works on the bucket as it is now.
	if _, err := st.Update(ctx, "s", func(map[string]bool) (map[string]bool, error) { return map[string]bool{"g": true}, nil }); err != nil {
		t.Fatal(err)
	}
}
