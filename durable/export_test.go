package durable

// KeyOf exposes the key rule to the tests.
func KeyOf(session, call string) string { return key(session, call) }
