package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode parses JSON tool arguments the way Validate expects them: numbers
// stay json.Number so integers keep their exact text. Trailing data after the
// value is rejected, and errors give the byte offset so a model can find the
// mistake.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// Offset counts the bytes read including the bad one; report
			// the bad byte's own (0-based) offset.
			return nil, fmt.Errorf("invalid JSON at byte offset %d: %s", max(se.Offset-1, 0), se.Error())
		case errors.Is(err, io.EOF):
			return nil, errors.New("invalid JSON: empty input")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("invalid JSON at byte offset %d: unexpected end of input", len(data))
		default:
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
	}
	off := int(dec.InputOffset())
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\n', '\r':
			off++
			continue
		}
		return nil, fmt.Errorf("invalid JSON at byte offset %d: unexpected data after the top-level value", off)
	}
	return v, nil
}
