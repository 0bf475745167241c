//go:build toolstream_testhooks

package interceptors

// SetExpiryHook sets the hook called when an approval's time is up, before
// the request is withdrawn (nil: none); the returned func puts back the
// one before.
func SetExpiryHook(f func()) (restore func()) {
	old := onExpiry
	onExpiry = f
	return func() { onExpiry = old }
}

// SetInterruptHook sets the hook called when a waiting call's (or batch's)
// wait is interrupted, before its request is withdrawn (nil: none); the
// returned func puts back the one before.
func SetInterruptHook(f func()) (restore func()) {
	old := onInterrupt
	onInterrupt = f
	return func() { onInterrupt = old }
}
