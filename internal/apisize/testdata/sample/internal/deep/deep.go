package deep

// Skipped: internal.
func Gone() {}
