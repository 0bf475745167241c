package source

// hello is where drift.md cuts a fragment from.
func hello(name string) string {
	return "hi, " + name
}
