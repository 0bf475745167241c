package remote_test

import (
	"errors"

	"github.com/toolstream/toolstream/remote"
)

// isErr reports whether err is, or wraps, an error of type E.
func isErr[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// isLost reports whether err is, or wraps, a *remote.LostError.
func isLost(err error) bool { return isErr[*remote.LostError](err) }
