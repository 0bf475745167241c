//go:build toolstream_testhooks

package hook

// OnBeforeAnswer, when set, is called by the ui thread's Begin before it gives
// the i-th answer of a request, after all of them were checked: the window
// in which an approval may expire.
var OnBeforeAnswer func(i int)

// BeforeAnswer calls OnBeforeAnswer, if set.
func BeforeAnswer(i int) {
	if OnBeforeAnswer != nil {
		OnBeforeAnswer(i)
	}
}
