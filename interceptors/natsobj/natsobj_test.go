package natsobj_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/interceptors/natsobj"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// lines is a tool that streams n numbered lines of 58 bytes.
func lines(t *testing.T) *toolkit.Tool {
	t.Helper()
	return toolkit.MustTool(toolkit.Spec{Name: "big", Description: "Numbered lines."},
		func(ctx context.Context, in struct {
			Lines int `json:"lines"`
		}) (string, error) {
			em := stream.From(ctx)
			for i := 1; i <= in.Lines; i++ {
				fmt.Fprintf(em, "line %d: %s\n", i, strings.Repeat("x", 50))
			}
			return "done", nil
		})
}

func fullText(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d: %s\n", i, strings.Repeat("x", 50))
	}
	return b.String() + "done"
}

func TestEvictToObjectStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	b, err := natsobj.New(ctx, js, "tool_results", natsobj.TTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// A second backend binds to the bucket that now exists.
	if _, err := natsobj.New(ctx, js, "tool_results"); err != nil {
		t.Fatal(err)
	}

	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	if err := tk.Use(interceptors.Evict(interceptors.EvictBackend(b), interceptors.EvictLimit(1000))); err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, lines(t))
	res := testutil.Run(t, tk, "s", testutil.Call("c1", "big", `{"lines":5000}`))[0] // over 128 KiB: several chunks
	testutil.CheckDeltasAddUp(t, rec, res)
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
	if want := fullText(5000); string(data) != want {
		t.Fatalf("read back %d bytes, stored %d", len(data), len(want))
	}
	st, err := store.Status(ctx)
	if err != nil || st.TTL() != time.Hour {
		t.Fatalf("status %v, %v", st, err)
	}
}

// bucket100K returns a backend on a new 100 KiB bucket named name, on an
// embedded JetStream server of the test's own, and the bucket itself.
func bucket100K(ctx context.Context, t *testing.T, name string) (interceptors.Backend, jetstream.ObjectStore) {
	t.Helper()
	js := natstest.JetStream(t)
	b, err := natsobj.New(ctx, js, name, natsobj.MaxBytes(100<<10))
	if err != nil {
		t.Fatal(err)
	}
	store, err := js.ObjectStore(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return b, store
}

func TestObjectStoreRetention(t *testing.T) {
	defer natsobj.SetHold(0)() // every object is old enough to purge
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, store := bucket100K(ctx, t, "small")
	// Each object takes about 30 KiB: the bucket holds three.
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("t-%032d.txt", i) // as Evict names results
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

// A batch's results fill the bucket: making room for the last one must not
// purge an object whose reference another call of the batch was just
// given. Every reference returned reads exactly its result, or the result
// says it could not be stored and why.
func TestObjectStoreKeepsReferencesJustHandedOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, store := bucket100K(ctx, t, "batch")
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	if err := tk.Use(interceptors.Evict(interceptors.EvictBackend(b), interceptors.EvictLimit(1000))); err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, tk, lines(t))
	// Each result takes about 30 KiB: the bucket holds three of the four.
	var calls []toolkit.Call
	for i := range 4 {
		calls = append(calls, testutil.Call(fmt.Sprintf("c%d", i), "big", `{"lines":500}`))
	}
	stored, refused := 0, 0
	for i, res := range testutil.Run(t, tk, "s", calls...) {
		testutil.CheckDeltasAddUp(t, rec, res)
		loc, ok := res.Meta[interceptors.EvictMetaLocation].(string)
		if !ok {
			if !strings.Contains(res.Text(), "could not be stored") || !strings.Contains(res.Text(), "may still read") {
				t.Fatalf("call %d: neither stored nor said why: %q", i, res.Text())
			}
			refused++
			continue
		}
		data, err := store.GetBytes(ctx, strings.TrimPrefix(loc, "nats-object://batch/"))
		if err != nil {
			t.Fatalf("call %d: the reference the model was just given is gone: %v", i, err)
		}
		if string(data) != fullText(500) {
			t.Fatalf("call %d: the reference holds %d bytes, not the result", i, len(data))
		}
		stored++
	}
	if stored != 3 || refused != 1 {
		t.Fatalf("%d stored, %d refused; want 3 and 1", stored, refused)
	}
}
