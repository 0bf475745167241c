package agui

// SetClientGoneHook sets the function the handler calls when it found
// its client gone, before it cancels (tests only; nil resets it).
func SetClientGoneHook(f func()) { clientGoneHook = f }
