package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// evJetStream starts an embedded NATS server for the test.
func evJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus, err := events.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		bus.Close(ctx)
	})
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestEvictToObjectStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := evJetStream(t)
	b, err := interceptors.ObjectStoreBackend(ctx, js, "tool_results", interceptors.ObjectStoreTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// A second backend binds to the bucket that now exists.
	if _, err := interceptors.ObjectStoreBackend(ctx, js, "tool_results"); err != nil {
		t.Fatal(err)
	}

	tk, rec := evKit(t, interceptors.Evict(interceptors.EvictBackend(b), interceptors.EvictLimit(1000)))
	res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 5000}))[0] // over 128 KiB: several chunks
	evCheckDeltas(t, rec, res)
	loc, _ := res.Meta[interceptors.EvictMetaLocation].(string)
	name, ok := strings.CutPrefix(loc, "nats-object://tool_results/")
	if !ok || !strings.Contains(res.Text(), loc) {
		t.Fatalf("location %q, message %q", loc, res.Text())
	}
	store, err := js.ObjectStore(ctx, "tool_results")
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.GetBytes(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if want := evFullText(5000, ""); string(data) != want {
		t.Fatalf("read back %d bytes, stored %d", len(data), len(want))
	}
	st, err := store.Status(ctx)
	if err != nil || st.TTL() != time.Hour {
		t.Fatalf("status %v, %v", st, err)
	}
}

func TestObjectStoreRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := evJetStream(t)
	b, err := interceptors.ObjectStoreBackend(ctx, js, "small", interceptors.ObjectStoreMaxBytes(100<<10))
	if err != nil {
		t.Fatal(err)
	}
	store, err := js.ObjectStore(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	// Each object takes about 30 KiB: the bucket holds three.
	var names []string
	for i := range 6 {
		name := interceptors.EvictFileName("t", string(rune('a'+i)))
		data := []byte(strings.Repeat(string(rune('a'+i)), 30<<10))
		if _, err := b.Put(ctx, name, data); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		names = append(names, name)
		got, err := store.GetBytes(ctx, name)
		if err != nil || string(got) != string(data) {
			t.Fatalf("object %d reads back %d bytes, %v", i, len(got), err)
		}
	}
	for i, name := range names {
		_, err := store.GetInfo(ctx, name)
		switch {
		case i < 3 && !errors.Is(err, jetstream.ErrObjectNotFound):
			t.Errorf("old object %d is still there (%v)", i, err)
		case i >= 3 && err != nil:
			t.Errorf("new object %d is gone: %v", i, err)
		}
	}
	if _, err := b.Put(ctx, "huge.txt", make([]byte, 200<<10)); err == nil {
		t.Error("an object larger than the bucket was stored")
	}
	if _, err := b.Put(ctx, "../x", []byte("x")); err == nil {
		t.Error("a name with a path was accepted")
	}
}

var _ toolkit.Observer = (*icRecorder)(nil)
