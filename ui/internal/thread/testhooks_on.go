//go:build toolstream_testhooks

package thread

import "time"

// Test hooks: they hold Thread.Begin, or a mark, in a window where no
// caller's code runs (see docs/rough-edges.md). They exist only in builds
// with the toolstream_testhooks tag; testhooks_off.go has the empty
// functions a production build inlines away. The tests that set them carry
// the same tag (export_hooks_test.go).

// markDelay holds marks back, to widen the window in which requests meet a
// response whose end is decided but not yet cut.
var markDelay time.Duration

// onMovedOn is called by Begin when it unlocked the thread to cancel a
// paused run for new messages: from there until it locks the thread again,
// a concurrent request that read the thread before may take the same
// messages.
var onMovedOn func()

// onAnswers is called when a request's answers were checked, before the
// thread announces them (ui_answers): the window in which the response
// Begin read may end.
var onAnswers func()

// onStart is called by Begin with the thread locked when it is about to
// start a run, before it asks the host whether it is closed: the window in
// which Close may begin.
var onStart func()

func markHook() {
	if markDelay > 0 {
		time.Sleep(markDelay)
	}
}

func movedOnHook() {
	if onMovedOn != nil {
		onMovedOn()
	}
}

func answersHook() {
	if onAnswers != nil {
		onAnswers()
	}
}

func startHook() {
	if onStart != nil {
		onStart()
	}
}
