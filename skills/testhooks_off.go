//go:build !toolstream_testhooks

package skills

// Without the toolstream_testhooks tag the test hooks (testhooks_on.go) are
// empty: the compiler inlines them away.

func scanHook(string)             {}
func resolvedHook(string, string) {}
