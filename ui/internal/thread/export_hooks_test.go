//go:build toolstream_testhooks

package thread

import "time"

// SetMarkDelay holds every mark back by d (tests only).
func SetMarkDelay(d time.Duration) { markDelay = d }

// SetMovedOnHook sets the function Begin calls when it unlocked the
// thread to cancel a paused run for new messages (tests only; nil resets
// it).
func SetMovedOnHook(f func()) { onMovedOn = f }

// SetStartHook sets the function Begin calls when it is about to start a
// run, before it asks the host whether it is closed (tests only; nil
// resets it).
func SetStartHook(f func()) { onStart = f }

// SetAnswersHook sets the function Begin calls when a request's answers
// were checked, before the thread announces them (tests only; nil resets
// it).
func SetAnswersHook(f func()) { onAnswers = f }
