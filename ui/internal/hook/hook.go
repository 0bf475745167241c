// Package hook holds the test hooks the ui packages call at windows too
// narrow for their tests to hit by chance, where no caller's code runs.
// They exist only in builds with the toolstream_testhooks tag (hook_on.go);
// without it each is an empty function the compiler inlines away
// (hook_off.go). Only the hooks that tests of several ui packages use live
// here; a package's own stay unexported in it.
package hook
