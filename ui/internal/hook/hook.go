// Package hook holds the functions the ui packages call at windows too
// narrow for their tests to hit by chance; the tests set them, and in
// production each is nil (a nil check is all it costs). Only the hooks
// that tests of several ui packages use live here; a package's own stay
// unexported in it.
package hook

// BeforeAnswer is called by ui.Thread.Begin before it gives the i-th
// answer of a request, after all of them were checked: the window in
// which an approval may expire.
var BeforeAnswer func(i int)
