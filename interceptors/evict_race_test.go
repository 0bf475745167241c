package interceptors_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// evPuts wraps a backend and reports each finished Put on a channel. A Put
// whose data starts with hold's line waits for release first: a slow store.
type evPuts struct {
	interceptors.Backend
	hold    string
	release chan struct{}
	done    chan string // the stored data's first line
}

func (p *evPuts) Put(ctx context.Context, name string, data []byte) (string, error) {
	if p.hold != "" && strings.HasPrefix(string(data), p.hold+"\n") {
		<-p.release
	}
	loc, err := p.Backend.Put(ctx, name, data)
	first, _, _ := strings.Cut(string(data), "\n")
	p.done <- first
	return loc, err
}

// Retry, then Timeout, then Evict: the first attempt's result is complete
// but its store is slow, so the Timeout gives up on the attempt while Evict
// is storing it; the retry's result is evicted and returned. The abandoned
// store then finishes. The reference the model got must still name exactly
// the retry's content.
func TestEvictAbandonedAttemptNeverOverwritesTheReference(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	release := make(chan struct{})
	puts := &evPuts{Backend: interceptors.DirBackend(dir, 0, 0), hold: "ATTEMPT-1", release: release, done: make(chan string, 4)}
	tk := icKit(t, nil,
		interceptors.Retry(interceptors.RetrySleep(func(ctx context.Context, _ time.Duration) error { return ctx.Err() })),
		interceptors.Timeout(20*time.Millisecond, interceptors.TimeoutGrace(time.Millisecond)),
		interceptors.Evict(interceptors.EvictBackend(puts), interceptors.EvictLimit(100)),
	)
	var mu sync.Mutex
	attempt := 0
	slow := icTool(t, toolkit.Spec{Name: "slow"}, func(ctx context.Context) (string, error) {
		mu.Lock()
		attempt++
		n := attempt
		mu.Unlock()
		em := stream.From(ctx)
		fmt.Fprintf(em, "ATTEMPT-%d\n", n)
		return strings.Repeat(fmt.Sprintf("attempt %d's content\n", n), 20), nil
	})
	testutil.Add(t, tk, slow)
	sess, err := tk.Session("s")
	if err != nil {
		t.Fatal(err)
	}
	res := sess.Run(context.Background(), []toolkit.Call{{ID: "c1", Name: "slow", Args: []byte(`{}`)}})[0]
	if res.State != events.StateSuccess {
		t.Fatalf("state %s: %s", res.State, res.Text())
	}
	if got := <-puts.done; got != "ATTEMPT-2" {
		t.Fatalf("the first store was %q", got)
	}
	loc, _ := res.Meta[interceptors.EvictMetaLocation].(string)
	if loc == "" || !strings.Contains(res.Text(), loc) {
		t.Fatalf("no location in the result: %q, meta %v", res.Text(), res.Meta)
	}
	close(release)
	if got := <-puts.done; got != "ATTEMPT-1" {
		t.Fatalf("the late store was %q", got)
	}
	data, err := os.ReadFile(loc)
	if err != nil {
		t.Fatalf("the reference the model got is gone: %v", err)
	}
	if first, _, _ := strings.Cut(string(data), "\n"); first != "ATTEMPT-2" {
		t.Fatalf("the reference returned with attempt 2's result now holds %q...: an abandoned attempt overwrote it", first)
	}
}

// Retention runs after each store, while the batch's other results may
// already point at files. With small limits (three results, a folder of
// two files) or one result as large as the folder's byte limit, the
// clean-up must not delete a file whose reference a call of the batch was
// just given: every reference returned must read exactly its result, or
// the result must say that it could not be stored.
func TestEvictRetentionKeepsReferencesJustHandedOut(t *testing.T) {
	for _, c := range []struct {
		name      string
		files     int
		bytes     int64
		lines     []int
		minDenied int
	}{
		{"files", 2, 0, []int{20, 20, 20}, 1},
		{"bytes", 0, 3000, []int{20, 20, 50}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			tk, rec := evKit(t, interceptors.Evict(interceptors.EvictBackend(interceptors.DirBackend(dir, c.files, c.bytes)), interceptors.EvictLimit(100)))
			var calls []toolkit.Call
			for i, n := range c.lines {
				calls = append(calls, evCall(fmt.Sprintf("c%d", i), "big", evIn{Lines: n}))
			}
			denied := 0
			for i, res := range evRun(t, tk, "s", calls...) {
				evCheckDeltas(t, rec, res)
				full := evFullText(c.lines[i], "")
				loc, ok := res.Meta[interceptors.EvictMetaLocation].(string)
				if !ok {
					if _, failed := res.Meta[interceptors.EvictMetaError]; !failed || !strings.Contains(res.Text(), "could not be stored") || !strings.Contains(res.Text(), "may still read") {
						t.Fatalf("call %d: neither stored nor said why: %q, meta %v", i, res.Text(), res.Meta)
					}
					denied++
					continue
				}
				data, err := os.ReadFile(loc)
				if err != nil {
					t.Fatalf("call %d: the reference the model was just given is gone: %v", i, err)
				}
				if string(data) != full {
					t.Fatalf("call %d: the reference holds %d bytes, not the result's %d", i, len(data), len(full))
				}
			}
			if denied < c.minDenied {
				t.Fatalf("%d results were refused, want at least %d: the limits were not kept", denied, c.minDenied)
			}
		})
	}
}
