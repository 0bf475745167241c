package groups

// SetResetHook sets a function reset_tools' handler calls when it starts
// (nil: none); the returned func puts back the one before.
func SetResetHook(f func()) (restore func()) {
	old := resetHook
	resetHook = f
	return func() { resetHook = old }
}
