package sample

// A refers to b.go (B, T) and to c.go (T.M).
func A() {
	B()
	var t T
	t.M()
}
