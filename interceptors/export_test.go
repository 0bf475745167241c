package interceptors

// SetExpiryHook sets the hook called when an approval's time is up, before
// the request is withdrawn (nil: none); the returned func puts back the
// one before.
func SetExpiryHook(f func()) (restore func()) {
	old := expiryHook
	expiryHook = f
	return func() { expiryHook = old }
}
