package skills

// SetLoadHook sets a function load_skill_through_path calls between its
// check that the skill is still there and its read of the file (nil:
// none); the returned func puts back the one before.
func SetLoadHook(f func()) (restore func()) {
	old := loadHook
	loadHook = f
	return func() { loadHook = old }
}

// DefaultResourceLimit is defaultResourceLimit (tests only).
const DefaultResourceLimit = defaultResourceLimit

// MaxPathBytes is maxPathBytes (tests only).
const MaxPathBytes = maxPathBytes
