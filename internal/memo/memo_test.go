package memo

import (
	"errors"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	var c Cache[int]
	builds := 0
	get := func(key string) int {
		v, err := c.Get([]byte(key), func() (int, error) { builds++; return len(key) * 10, nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if get("ab") != 20 || get("ab") != 20 || get("abc") != 30 {
		t.Fatal("wrong values")
	}
	if builds != 2 {
		t.Fatalf("%d builds, want 2 (one per key)", builds)
	}
	boom := errors.New("boom")
	if _, err := c.Get([]byte("x"), func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("build error: %v", err)
	}
	if get("x") != 10 || builds != 3 {
		t.Fatalf("a failed build was kept (%d builds)", builds)
	}
}

func TestCacheLimit(t *testing.T) {
	c := Cache[int]{Limit: 2}
	builds := 0
	for _, k := range []string{"a", "b", "a", "c", "a"} {
		c.Get([]byte(k), func() (int, error) { builds++; return 0, nil })
	}
	// a, b built; a kept; c finds the cache full and starts it over; a
	// is built again.
	if builds != 4 || len(c.m) != 2 {
		t.Fatalf("%d builds, %d kept", builds, len(c.m))
	}
}

func TestCacheConcurrent(t *testing.T) {
	var c Cache[string]
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				key := []byte{byte('a' + (i+j)%4)}
				v, _ := c.Get(key, func() (string, error) { return string(key), nil })
				if v != string(key) {
					t.Errorf("key %s: got %s", key, v)
				}
			}
		})
	}
	wg.Wait()
}
