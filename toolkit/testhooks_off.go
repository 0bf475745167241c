//go:build !toolstream_testhooks

package toolkit

// Without the toolstream_testhooks tag the test hooks (testhooks_on.go) are
// empty: the compiler inlines them away.

func hookRunnerQueued(*stage) {}
func hookRunnerClaimed(*call) {}
func hookSubmitTaken()        {}
func hookExtTaken()           {}
