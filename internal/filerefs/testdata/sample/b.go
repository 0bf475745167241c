package sample

// T's field f is no reference: fields are read with their type.
type T struct{ f int }

func B() { _ = T{}.f }

// B2 refers back to a.go.
func B2() { A() }
