//go:build !toolstream_testhooks

package hook

// BeforeAnswer does nothing without the toolstream_testhooks tag.
func BeforeAnswer(int) {}
