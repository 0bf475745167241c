package sample

// Skipped: a test file.
func TestOnly() {}
