package kvlead_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	r := kvlead.New(js, "lead", 0)
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

// TestReaderKeepsTheAPIPrefixAndDomain: a Reader sends its requests with
// the API prefix or the domain of the JetStream context it is made from
// (a bucket in another domain or account is reached only so). Here they
// name an API nobody serves, so a read that went out under them fails
// with no responders (sent again until the context ends: nobody answers
// during an election either), while the default context reads the value.
func TestReaderKeepsTheAPIPrefixAndDomain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus := natstest.Bus(t)
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "where"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	prefixed, err := jetstream.NewWithAPIPrefix(bus.Conn(), "$NOBODY.API")
	if err != nil {
		t.Fatal(err)
	}
	domained, err := jetstream.NewWithDomain(bus.Conn(), "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]jetstream.JetStream{"default": js, "prefix": prefixed, "domain": domained} {
		r := kvlead.New(c, "where", 0)
		quick, cancelQuick := context.WithTimeout(ctx, 500*time.Millisecond)
		value, _, err := r.Get(quick, "k")
		cancelQuick()
		switch {
		case name == "default" && (err != nil || string(value) != "v"):
			t.Errorf("the default context: %q %v", value, err)
		case name != "default" && !errors.Is(err, nats.ErrNoResponders):
			t.Errorf("the %s context read %q, %v; want no responders (its requests go elsewhere)", name, value, err)
		}
	}
}
