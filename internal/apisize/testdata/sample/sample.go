// Package sample is what apisize's test counts: 7 exported identifiers.
package sample

// Exported names: 1 const, 1 var, 2 types, 1 func.
const Max = 1

var Default = 2

type Thing struct {
	Name  string // fields are not counted
	inner int
}

type Doer interface {
	Do()   // counted: a method of an exported interface
	undo() // not counted
}

func New() *Thing { return &Thing{} }

// A method of an exported type (counted) and one unexported (not).
func (t *Thing) Run()  {}
func (t *Thing) step() {}

type hidden struct{}

// Not counted: the receiver's type is not exported.
func (hidden) Visible() {}
