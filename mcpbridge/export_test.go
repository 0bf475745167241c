package mcpbridge

// SetSyncHook runs f in each Sync after it read the toolkit's definitions
// (nil: nothing).
func SetSyncHook(f func()) { syncHook = f }
