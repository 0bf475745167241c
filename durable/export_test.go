package durable

import (
	"context"
	"time"
)

// KeyOf exposes the key rule to the tests.
func KeyOf(session, call string) string { return key(session, call) }

// SetDefaultElectionWait sets the bound of each read and write of the
// stores New opens without WithElectionWait (default defaultElectionWait)
// and returns a function that restores it.
func SetDefaultElectionWait(d time.Duration) (restore func()) {
	old := defaultWait.Swap(int64(d))
	return func() { defaultWait.Store(old) }
}

// Change applies fn to the stored call with the store's compare-and-set
// loop (what recordWait, finish and settle use).
func (s *Store) Change(ctx context.Context, session, call string, fn func(*Record) bool) error {
	return s.update(ctx, key(session, call), fn)
}
