package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// ForOutput infers the schema of a typed tool's output, a value of type t
// as encoding/json marshals it. It reports ok false, with no error, for
// types that have no object schema to publish: anything but a struct, a
// pointer to one or a map with string keys, and types that marshal
// themselves.
//
// It differs from [ForType] in one way: a type that marshals itself
// (json.Marshaler, or encoding.TextMarshaler for a string), anywhere inside
// t, is described by what it may marshal to (any value, or a string), not
// by its Go fields: a uuid.UUID is a [16]byte that marshals to a string,
// and a result that conforms must never be refused for it. time.Time and
// slog.Level keep jsonschema-go's string schema.
func ForOutput(t reflect.Type) (s *jsonschema.Schema, ok bool, err error) {
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case marshalsItself(base):
		return nil, false, nil
	case base.Kind() == reflect.Struct && base.NumField() > 0:
	case base.Kind() == reflect.Map && base.Key().Kind() == reflect.String:
	default:
		return nil, false, nil
	}
	own := map[reflect.Type]*jsonschema.Schema{}
	collectMarshalers(base, map[reflect.Type]bool{}, own)
	s, err = jsonschema.ForType(base, &jsonschema.ForOptions{TypeSchemas: own})
	if err != nil {
		return nil, false, fmt.Errorf("schema: %w", err)
	}
	if err := applyTags(base, s); err != nil {
		return nil, false, err
	}
	if _, err := Compile(s); err != nil {
		return nil, false, fmt.Errorf("schema: %s: %w", t, err)
	}
	return s, true, nil
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	// Types jsonschema-go already describes by what they marshal to.
	knownMarshalers = map[reflect.Type]bool{reflect.TypeFor[time.Time](): true, reflect.TypeFor[slog.Level](): true}
)

func marshalsItself(t reflect.Type) bool {
	if knownMarshalers[t] {
		return false
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) || t.Implements(textMarshaler) || pt.Implements(textMarshaler)
}

// collectMarshalers maps every type under t that marshals itself to the
// schema of what it may marshal to.
func collectMarshalers(t reflect.Type, seen map[reflect.Type]bool, out map[reflect.Type]*jsonschema.Schema) {
	if seen[t] {
		return
	}
	seen[t] = true
	if marshalsItself(t) {
		pt := reflect.PointerTo(t)
		if t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) {
			out[t] = &jsonschema.Schema{}
		} else {
			out[t] = &jsonschema.Schema{Type: "string"}
		}
		return
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && !marshalsItself(t.Elem()) {
		// encoding/json writes a []byte as a base64 string, not an array.
		out[t] = &jsonschema.Schema{Types: []string{"null", "string"}}
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		collectMarshalers(t.Elem(), seen, out)
	case reflect.Map:
		collectMarshalers(t.Elem(), seen, out)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() || f.Anonymous {
				collectMarshalers(f.Type, seen, out)
			}
		}
	}
}
