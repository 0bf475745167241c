package mcpbridge

// SetSyncHook runs f in each Sync after it read the toolkit's definitions
// (nil: nothing).
func SetSyncHook(f func()) { syncHook = f }

// SetMaxListPages sets the most pages a tools/list may have; it returns the
// previous bound.
func SetMaxListPages(n int) int { old := maxListPages; maxListPages = n; return old }

// DefaultSessionPrefix is defaultSessionPrefix (tests only).
const DefaultSessionPrefix = defaultSessionPrefix

// DefaultMaxResultSize is defaultMaxResultSize (tests only).
const DefaultMaxResultSize = defaultMaxResultSize

// DefaultPrefix is defaultPrefix (tests only).
var DefaultPrefix = defaultPrefix
