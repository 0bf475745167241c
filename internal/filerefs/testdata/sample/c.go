package sample

// M's receiver refers back to b.go.
func (T) M() {}
