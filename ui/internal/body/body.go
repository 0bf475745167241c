// Package body reads the JSON bodies of the UI protocols' requests a
// value at a time. Their clients (AG-UI's HttpAgent, the AI SDK's
// useChat) send the whole conversation with every request, tool results
// and assistant messages included, which the handlers do not read: read
// whole, a conversation with a few large results (screenshots, files)
// outgrew any bound on the body, and every later request of the thread
// was refused. A Reader keeps in memory only what its caller keeps
// (counted with Keep, bounded by the caller's limit) and one value at a
// time besides; the body as a whole is bounded by the caller's reader
// (http.MaxBytesReader with a far larger limit).
package body

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrTooMuch is Keep's error when what the caller keeps passes its limit.
var ErrTooMuch = errors.New("too much to keep")

// TooLarge reports whether err says that a body was too large: more kept
// than the caller's limit (ErrTooMuch), or more than its
// http.MaxBytesReader took.
func TooLarge(err error) bool {
	var tooLarge *http.MaxBytesError
	return errors.Is(err, ErrTooMuch) || errors.As(err, &tooLarge)
}

// Reader reads one JSON value from a body, piecewise.
type Reader struct {
	dec       *json.Decoder
	kept, max int
}

// New reads from r, letting the caller keep at most max bytes.
func New(r io.Reader, max int) *Reader { return &Reader{dec: json.NewDecoder(r), max: max} }

// Object reads an object (or null, which has no fields), calling field
// with each key; field must read the key's value (Decode, Skip, Object or
// Array).
func (r *Reader) Object(field func(key string) error) error {
	if ok, err := r.open('{', "an object"); !ok {
		return err
	}
	for r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("want a key, not %s", describe(tok))
		}
		if err := field(key); err != nil {
			return err
		}
	}
	_, err := r.dec.Token() // the closing brace (More said so)
	return err
}

// Array reads an array (or null, which has no elements), calling elem
// for each element; elem must read it.
func (r *Reader) Array(elem func() error) error {
	if ok, err := r.open('[', "an array"); !ok {
		return err
	}
	for r.dec.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err := r.dec.Token()
	return err
}

// open reads the token that opens an object or array (delim), reporting
// whether its elements follow: not for null (nil error) or on an error.
func (r *Reader) open(delim json.Delim, what string) (bool, error) {
	tok, err := r.dec.Token()
	if err != nil || tok == nil {
		return false, err
	}
	if tok != delim {
		return false, fmt.Errorf("want %s, not %s", what, describe(tok))
	}
	return true, nil
}

// PerValue is what each value kept counts besides its bytes.
const PerValue = 16

// String reads the next value into s and keeps it (its length and PerValue).
func (r *Reader) String(s *string) error {
	if err := r.dec.Decode(s); err != nil {
		return err
	}
	return r.Keep(len(*s) + PerValue)
}

// Raw reads the next value into m as it is and keeps it (its length and
// PerValue).
func (r *Reader) Raw(m *json.RawMessage) error {
	if err := r.dec.Decode(m); err != nil {
		return err
	}
	return r.Keep(len(*m) + PerValue)
}

// Decode reads the next value into v, as json.Unmarshal would.
func (r *Reader) Decode(v any) error { return r.dec.Decode(v) }

// Skip reads the next value and drops it.
func (r *Reader) Skip() error {
	var v json.RawMessage
	return r.dec.Decode(&v)
}

// Keep counts n more bytes the caller keeps, and fails with ErrTooMuch
// past the limit.
func (r *Reader) Keep(n int) error {
	r.kept += n
	if r.kept > r.max {
		return fmt.Errorf("%w: more than %d bytes", ErrTooMuch, r.max)
	}
	return nil
}

// End checks that nothing but white space follows the value.
func (r *Reader) End() error {
	if tok, err := r.dec.Token(); err != io.EOF {
		if err != nil {
			return err
		}
		return fmt.Errorf("%s after the value", describe(tok))
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
