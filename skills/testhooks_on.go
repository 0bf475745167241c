//go:build toolstream_testhooks

package skills

import "path"

// Test hooks: they hold a scan or a read in a window where no caller's code
// runs (see docs/rough-edges.md). They exist only in builds with the
// toolstream_testhooks tag; testhooks_off.go has the empty functions a
// production build inlines away. The tests that set them carry the same tag.

// onScan runs before the scan lists a folder.
var onScan func(dir string)

// onResolved runs between the check of a file's path and its open, with
// the path read (a SKILL.md's from the repository's root, a resource's from
// its skill's folder).
var onResolved func(rel string)

func scanHook(dir string) {
	if onScan != nil {
		onScan(dir)
	}
}

func resolvedHook(dir, name string) {
	if onResolved != nil {
		onResolved(path.Join(dir, name))
	}
}
