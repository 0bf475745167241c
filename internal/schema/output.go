package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
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
	case knownMarshalers[base] || marshalsItself(base):
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
	for _, p := range s.Properties {
		nullMaps(p)
	}
	nullMaps(s.Items)
	if s.AdditionalProperties != nil {
		nullMaps(s.AdditionalProperties)
	}
	quotedFields(base, s)
	if _, err := Compile(s); err != nil {
		return nil, false, fmt.Errorf("schema: %s: %w", t, err)
	}
	return s, true, nil
}

// nullMaps lets every map under s be null, as encoding/json writes a nil
// map (jsonschema-go makes slices and pointers nullable, not maps). A map's
// schema is an object with additionalProperties and no properties; a
// struct's has properties, or additionalProperties false.
func nullMaps(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Type == "object" && s.Properties == nil && s.AdditionalProperties != nil && s.AdditionalProperties.Not == nil {
		s.Types, s.Type = []string{"null", "object"}, ""
	}
	for _, p := range s.Properties {
		nullMaps(p)
	}
	nullMaps(s.Items)
	if a := s.AdditionalProperties; a != nil && a.Not == nil {
		nullMaps(a)
	}
}

// quotedFields describes the fields tagged `json:",string"` (a number or
// bool written inside a JSON string) as strings, walking the Go type and
// its schema in step.
func quotedFields(t reflect.Type, s *jsonschema.Schema) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || knownMarshalers[t] || marshalsItself(t) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		quotedFields(t.Elem(), s.Items)
	case reflect.Map:
		quotedFields(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			name, ok := jsonName(f)
			if f.Anonymous || !ok || s.Properties[name] == nil {
				continue
			}
			ps := s.Properties[name]
			if quoted(f) {
				q := &jsonschema.Schema{Type: "string", Description: ps.Description}
				if f.Type.Kind() == reflect.Pointer {
					q.Type, q.Types = "", []string{"null", "string"}
				}
				s.Properties[name] = q
				continue
			}
			quotedFields(f.Type, ps)
		}
	}
}

// quoted reports whether encoding/json writes the field inside a string:
// the ",string" option on a bool, number or string field.
func quoted(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !slices.Contains(strings.Split(opts, ","), "string") {
		return false
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
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
	for t.Kind() == reflect.Pointer {
		t = t.Elem() // jsonschema-go looks the pointed-to type up
	}
	if seen[t] {
		return
	}
	seen[t] = true
	if marshalsItself(t) {
		pt := reflect.PointerTo(t)
		if t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) {
			// Any JSON value, spelled out: jsonschema-go adds "null" to
			// the types of a pointer's schema, which would leave {} only
			// null.
			out[t] = &jsonschema.Schema{Types: []string{"null", "boolean", "object", "array", "number", "string"}}
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
	case reflect.Slice, reflect.Array:
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
