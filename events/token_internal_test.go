package events

import (
	"errors"
	"fmt"
)

// errInvalidToken is wrapped by the errors of decodeTokenErr.
var errInvalidToken = errors.New("events: invalid subject token")

// decodeTokenErr is decodeToken with its reason as an error wrapping
// errInvalidToken (tests only).
func decodeTokenErr(tok string) (string, error) {
	id, reason := decodeToken(tok)
	if reason != "" {
		return "", fmt.Errorf("%w %q: %s", errInvalidToken, tok, reason)
	}
	return id, nil
}
