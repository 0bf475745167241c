package durable

import "github.com/toolstream/toolstream/events"

// KeyOf exposes the key rule to the tests.
func KeyOf(session, call string) string { return key(session, call) }

// SetObserveHook runs f before Observe records each suspension (nil: none).
func SetObserveHook(f func(*events.Event)) { observeHook = f }
