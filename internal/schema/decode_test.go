package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	v, err := Decode([]byte(" {\"a\": 10, \"b\": [1.5, true, null, \"x\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": json.Number("10"), "b": []any{json.Number("1.5"), true, nil, "x"}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v, want %#v", v, want)
	}
	if v, err := Decode([]byte(`1e400`)); err != nil || v != json.Number("1e400") {
		t.Errorf("Decode(1e400) = %v, %v; numbers are kept as text", v, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "invalid JSON: empty input"},
		{`   `, "invalid JSON: empty input"},
		{`{"a":}`, "invalid JSON at byte offset 5: invalid character '}' looking for beginning of value"},
		{`{"a":1`, "invalid JSON at byte offset 6: unexpected end of input"},
		{`{"a":1}x`, "invalid JSON at byte offset 7: unexpected data after the top-level value"},
		{`{"a":1} {"b":2}`, "invalid JSON at byte offset 8: unexpected data after the top-level value"},
		{`123abc`, "invalid JSON at byte offset 3: unexpected data after the top-level value"},
		{`{'a':1}`, "invalid JSON at byte offset 1: invalid character '\\'' looking for beginning of object key string"},
	} {
		_, err := Decode([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%q) error = %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "invalid JSON") {
			t.Errorf("unclear error %v", err)
		}
	}
}
