package groups

// MaxSearchQuery is maxSearchQuery (tests only).
const MaxSearchQuery = maxSearchQuery

// MaxSearchResults is maxSearchResults (tests only).
const MaxSearchResults = maxSearchResults

// DefaultSearchResults is defaultSearchResults (tests only).
const DefaultSearchResults = defaultSearchResults
