// Package memo keeps values built from a key, a bounded number of them: the
// per-state variants of a tool that groups and skills build once and share
// between the sessions in that state.
package memo

import "sync"

// DefaultLimit is how many values a Cache keeps when its Limit is zero.
const DefaultLimit = 256

// Cache maps keys to values built on first use. The zero value is ready.
type Cache[T any] struct {
	// Limit bounds the values kept; past it the cache starts over (states
	// are few in practice; the bound only keeps a pathological caller from
	// growing it without end). Zero means DefaultLimit.
	Limit int

	mu sync.Mutex
	m  map[string]T
}

// Get returns the value kept for key, or builds it with build and keeps it.
// build runs without the lock, so callers with other keys need not wait;
// two callers with the same new key may both build, and one result is kept.
// A build error is returned and nothing is kept.
func (c *Cache[T]) Get(key []byte, build func() (T, error)) (T, error) {
	c.mu.Lock()
	v, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	limit := c.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= limit {
		clear(c.m)
	}
	if c.m == nil {
		c.m = map[string]T{}
	}
	c.m[string(key)] = v
	return v, nil
}
