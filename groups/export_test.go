package groups

// SetResetHook sets a function reset_tools' handler calls when it starts
// (nil: none); the returned func puts back the one before.
func SetResetHook(f func()) (restore func()) {
	old := resetHook
	resetHook = f
	return func() { resetHook = old }
}

// MaxSearchQuery is maxSearchQuery (tests only).
const MaxSearchQuery = maxSearchQuery

// MaxSearchResults is maxSearchResults (tests only).
const MaxSearchResults = maxSearchResults

// DefaultSearchResults is defaultSearchResults (tests only).
const DefaultSearchResults = defaultSearchResults
