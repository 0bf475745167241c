//go:build toolstream_testhooks

package interceptors

// Test hooks: they hold a goroutine in a window where no caller's code runs
// (see docs/rough-edges.md). They exist only in builds with the
// toolstream_testhooks tag; testhooks_off.go has the empty functions a
// production build inlines away. The tests that set them carry the same tag.

// onExpiry is called when an approval's time is up, before the request is
// withdrawn: the window in which a decision may still take it.
var onExpiry func()

// onInterrupt is called when a waiting call's (or batch's) wait is
// interrupted, before its request is withdrawn: the window in which a
// decision may still take it.
var onInterrupt func()

func expiryHook() {
	if onExpiry != nil {
		onExpiry()
	}
}

func interruptHook() {
	if onInterrupt != nil {
		onInterrupt()
	}
}
