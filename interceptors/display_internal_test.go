package interceptors

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestVisibleJSON: hidden characters in strings (keys too) become JSON
// escapes, bytes that are not UTF-8 \ufffd (what a decoder reads); the
// value is the same; escapes and text outside strings are untouched;
// plain arguments are returned as they are.
func TestVisibleJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"b"}`, `{"a":"b"}`},
		{`{"a":"é ✓"}`, `{"a":"é ✓"}`},
		{"{\"a\u202e\":\"x\u2066y\"}", `{"a\u202e":"x\u2066y"}`},
		{"{\"a\":\"\\\"\u202e\\\\\u200b\"}", `{"a":"\"\u202e\\\u200b"}`},
		{"[\"\U000e0041\",1.5,\"\u00a0\"]", `["\udb40\udc41",1.5,"\u00a0"]`},
		{"{\"a\":\"\xff\x7f\"}", `{"a":"\ufffd\u007f"}`},
		{"{\"a\":\"\\u202e\"}", `{"a":"\u202e"}`},
	} {
		got := visibleJSON(json.RawMessage(c.in))
		if string(got) != c.want {
			t.Errorf("visibleJSON(%q) = %s, want %s", c.in, got, c.want)
		}
		var a, b any
		if json.Unmarshal([]byte(c.in), &a) != nil || json.Unmarshal(got, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("visibleJSON(%q) = %s: not the same value", c.in, got)
		}
	}
	if got := visibleText("a\u202eb\xffc\U000e0041 d\\u202e"); got != `a\u202eb\xffc\U000e0041 d\u202e` {
		t.Errorf("visibleText: %s", got)
	}
}
