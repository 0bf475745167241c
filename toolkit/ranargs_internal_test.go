package toolkit

import (
	"encoding/json"
	"testing"
)

// TestWithoutPresetsReadsKeysAsJSON: a preset is left out of an args event
// however its key is spelled (an escaped letter is the same key to the
// handler), values of other keys are kept byte for byte, and arguments it
// cannot read give nothing rather than something that may hold a preset.
func TestWithoutPresetsReadsKeysAsJSON(t *testing.T) {
	tool := &Tool{presetVals: map[string]json.RawMessage{"token": json.RawMessage(`"s3cret"`)}}
	for in, want := range map[string]string{
		`{"path":"/tmp/x","token":"s3cret"}`:                    `{"path":"/tmp/x"}`,
		`{"to\u006ben":"s3cret","path":{"a":[1, 2]}}`:           `{"path":{"a":[1, 2]}}`,
		`{"token":"s3cret"}`:                                    `{}`,
		`{"path":"a\u003cb","n":1e2,"nested":{"token":"kept"}}`: `{"path":"a\u003cb","n":1e2,"nested":{"token":"kept"}}`,
		`[1,2]`:               ``,
		`{"path":"x","token"`: ``,
	} {
		if got := string(withoutPresets(tool, json.RawMessage(in))); got != want {
			t.Errorf("withoutPresets(%s) = %s, want %s", in, got, want)
		}
	}
}
