package kvlead_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/internal/kvlead"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestGetAgreesWithTheBucket: a leader read answers as jetstream.KeyValue.Get
// does: a stored value with its revision (the one a compare-and-set
// update names), and jetstream.ErrKeyNotFound for a key never written,
// deleted or purged (durable deletes the record of an interrupted call, so
// that it runs again).
func TestGetAgreesWithTheBucket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "lead", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	r, err := kvlead.New(js, "lead")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get(ctx, "never"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a key never written: %v, want ErrKeyNotFound", err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := kv.Put(ctx, k, []byte(k+"1")); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := kv.Put(ctx, "a", []byte("a2"))
	if err != nil {
		t.Fatal(err)
	}
	value, got, err := r.Get(ctx, "a")
	if err != nil || !bytes.Equal(value, []byte("a2")) || got != rev {
		t.Fatalf("Get(a) = %q, revision %d, %v; want \"a2\", revision %d", value, got, err, rev)
	}
	if _, err := kv.Update(ctx, "a", []byte("a3"), got); err != nil {
		t.Fatalf("an update at the revision Get returned: %v", err)
	}
	if err := kv.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, _, err := r.Get(ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("Get(%s) after a delete or purge: %v, want ErrKeyNotFound", k, err)
		}
	}
}
