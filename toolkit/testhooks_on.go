//go:build toolstream_testhooks

package toolkit

import (
	"context"
	"sync/atomic"
)

// Test hooks: they hold a goroutine in a window where no caller's code runs
// (see docs/rough-edges.md). They exist only in builds with the
// toolstream_testhooks tag; testhooks_off.go has the empty functions a
// production build inlines away. The tests that set them carry the same tag
// (export_hooks_test.go).

// runnerHook runs in a stage's runner with the call it is about to take
// (its context, the call's): before it takes it from the queue (claimed
// false), and once it did, just before the call begins (claimed true).
// Atomic: runners of an earlier test may still read it.
var runnerHook atomic.Pointer[func(c context.Context, claimed bool)]

// submitTaken runs in Submit between taking the call and handing it the
// result; extTaken when an external wait that ended finds that Submit or
// Close took its call.
var submitTaken, extTaken func()

func hookRunnerQueued(st *stage) {
	if h := runnerHook.Load(); h != nil {
		if k := int(st.next.Load()); k < len(st.calls) {
			(*h)(&st.calls[k], false)
		}
	}
}

func hookRunnerClaimed(c *call) {
	if h := runnerHook.Load(); h != nil {
		(*h)(c, true)
	}
}

func hookSubmitTaken() {
	if submitTaken != nil {
		submitTaken()
	}
}

func hookExtTaken() {
	if extTaken != nil {
		extTaken()
	}
}
