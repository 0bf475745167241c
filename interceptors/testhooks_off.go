//go:build !toolstream_testhooks

package interceptors

// Without the toolstream_testhooks tag the test hooks (testhooks_on.go) are
// empty: the compiler inlines them away.

func expiryHook()    {}
func interruptHook() {}
