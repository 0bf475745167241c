package mcpbridge

// SyncInTwo does the first half of a Sync now (its ticket, the toolkit's
// definitions) and returns the second (tools/list made to match them), so
// that a test can run another Sync in between.
func SyncInTwo(s *Server) (apply func() error) {
	ticket, defs := s.readDefinitions()
	return func() error { return s.apply(ticket, defs) }
}

// SetMaxListPages sets the most pages a tools/list may have; it returns the
// previous bound.
func SetMaxListPages(n int) int { old := maxListPages; maxListPages = n; return old }

// DefaultSessionPrefix is defaultSessionPrefix (tests only).
const DefaultSessionPrefix = defaultSessionPrefix

// DefaultMaxResultSize is defaultMaxResultSize (tests only).
const DefaultMaxResultSize = defaultMaxResultSize

// DefaultPrefix is defaultPrefix (tests only).
var DefaultPrefix = defaultPrefix
