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
	for in, want := range map[string]string{
		`"\u00e9\ud83d\ude00"`: "é😀",
		`"\ud800\u0041"`:       "\ufffdA",  // lone surrogate
		"\"a\xffb\"":           "a\ufffdb", // invalid UTF-8
		`"\"\\\/\b\f\n\r\t"`:   "\"\\/\b\f\n\r\t",
	} {
		if v, err := Decode([]byte(in)); err != nil || v != want {
			t.Errorf("Decode(%s) = %q, %v; want %q", in, v, err, want)
		}
	}
	if v, err := Decode([]byte(`{"a":1,"a":2}`)); err != nil || !reflect.DeepEqual(v, map[string]any{"a": json.Number("2")}) {
		t.Errorf("duplicate keys: %v, %v", v, err)
	}
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := Decode([]byte(deep)); err != nil {
		t.Errorf("depth %d: %v", maxDepth, err)
	}
	if _, err := Decode([]byte("[" + deep + "]")); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("depth %d+1: %v", maxDepth, err)
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
		{`[1,]`, "invalid JSON at byte offset 3: invalid character ']' looking for beginning of value"},
		{`{"a":1,}`, "invalid JSON at byte offset 7: invalid character '}' looking for beginning of object key string"},
		{`{"a" 1}`, "invalid JSON at byte offset 5: invalid character '1' after object key"},
		{`{"a":1 "b":2}`, "invalid JSON at byte offset 7: invalid character '\"' after object key:value pair"},
		{`[1 2]`, "invalid JSON at byte offset 3: invalid character '2' after array element"},
		{`[tru]`, "invalid JSON at byte offset 4: invalid character ']' in literal true (expecting 'e')"},
		{`-x`, "invalid JSON at byte offset 1: invalid character 'x' in numeric literal"},
		{`1.e3`, "invalid JSON at byte offset 2: invalid character 'e' after decimal point in numeric literal"},
		{`1e+`, "invalid JSON at byte offset 3: unexpected end of input"},
		{`"a\qb"`, "invalid JSON at byte offset 3: invalid character 'q' in string escape code"},
		{`"\u12x4"`, "invalid JSON at byte offset 5: invalid character 'x' in \\u hexadecimal character escape"},
		{"\"a\nb\"", "invalid JSON at byte offset 2: invalid character '\\n' in string literal"},
		{`"abc`, "invalid JSON at byte offset 4: unexpected end of input"},
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
