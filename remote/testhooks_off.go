//go:build !toolstream_testhooks

package remote

// Without the toolstream_testhooks tag the test hooks (testhooks_on.go) are
// empty: the compiler inlines them away.

func requestHook(*Worker) {}
func backoffHook(*Client) {}
