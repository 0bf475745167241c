package durable

import (
	"time"

	"github.com/toolstream/toolstream/events"
)

// KeyOf exposes the key rule to the tests.
func KeyOf(session, call string) string { return key(session, call) }

// SetObserveHook runs f when Observe gets a suspend event (nil: none).
func SetObserveHook(f func(*events.Event)) {
	if f == nil {
		observeHook.Store(nil)
		return
	}
	observeHook.Store(&f)
}

// SetBookkeepingTimeout bounds each of the interceptor's reads and writes
// (default 10 s) and returns a function that restores it.
func SetBookkeepingTimeout(d time.Duration) (restore func()) {
	old := bookkeepingTimeout.Swap(int64(d))
	return func() { bookkeepingTimeout.Store(old) }
}
