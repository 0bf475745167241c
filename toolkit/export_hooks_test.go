//go:build toolstream_testhooks

package toolkit

import "context"

// SetSubmitHooksForTest sets the hooks of the race between Session.Submit and
// the end of an external call's wait (nil to clear them).
func SetSubmitHooksForTest(taken, extTakenFn func()) { submitTaken, extTaken = taken, extTakenFn }

// SetRunnerHookForTest sets the hook that runs in a stage's runner with the
// call it is about to take, before it takes it from the queue (claimed
// false) and just before the call begins (claimed true); nil clears it.
func SetRunnerHookForTest(f func(c context.Context, claimed bool)) {
	if f == nil {
		runnerHook.Store(nil)
		return
	}
	runnerHook.Store(&f)
}
