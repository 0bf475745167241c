package durable_test

import "errors"

// isErr reports whether err is, or wraps, an error of type E.
func isErr[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
