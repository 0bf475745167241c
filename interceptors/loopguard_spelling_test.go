package interceptors_test

import (
	"errors"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
)

// TestLoopGuardSameMeaningOtherSpelling: calls whose arguments mean the
// same, spelled differently (a number as 1.5, 1.50 or 15e-1; a string with
// JSON escapes), are one call repeated: the third of them is refused. A
// model that respells a number on every attempt must not dodge the guard.
// Calls that differ in value still count apart.
func TestLoopGuardSameMeaningOtherSpelling(t *testing.T) {
	for _, spellings := range [][]string{
		{`{"x":1.5}`, `{"x":1.50}`, `{"x":15e-1}`},
		{`{"x":1}`, `{"x":1.0}`, `{"x":1e0}`},
		{`{"x":100}`, `{"x":1E2}`, `{"x":0.1e+3}`},
		{`{"x":0}`, `{"x":-0}`, `{"x":0.000e5}`},
		{`{"x":-0.25}`, `{"x":-2.5e-1}`, `{"x":-25E-2}`},
		{`{"x":12345678901234567890123}`, `{"x":1.2345678901234567890123e22}`, `{"x":12345678901234567890123.000}`},
		{`{"x":[1.5,{"y":2e1}]}`, `{"x":[1.50,{"y":20}]}`, `{"x":[15e-1,{"y":20.0}]}`},
		{`{"q":"A"}`, `{"q":"\u0041"}`, `{"\u0071":"\u0041"}`},
		{`{"q":"a/b"}`, `{"q":"a\/b"}`, `{"q":"a\u002fb"}`},
		{`{"q":"é"}`, `{"q":"\u00e9"}`, `{"q":"\u00E9"}`},
	} {
		tk, _, ran := loopFixture(t, 3, time.Minute)
		s := testutil.Session(t, tk, "s")
		for i, args := range spellings {
			r := loopRun(t, s, "search", args)
			if i < 2 && r.State != events.StateSuccess {
				t.Fatalf("%s, call %d of %v: %s %q", args, i+1, spellings, r.State, r.Text())
			}
			if i == 2 && (r.State != events.StateError || !errors.Is(r.Err, interceptors.ErrLoop)) {
				t.Errorf("%v: the third call %s ran (%s); it means what the first two did", spellings, args, r.State)
			}
		}
		if ran.get() > 2 {
			t.Errorf("%v: the tool ran %d times", spellings, ran.get())
		}
	}
	// Different values stay different calls.
	tk, _, ran := loopFixture(t, 2, time.Minute)
	s := testutil.Session(t, tk, "s")
	for _, args := range []string{`{"x":1.5}`, `{"x":1.05}`, `{"x":15}`, `{"x":0.15}`, `{"x":-1.5}`, `{"x":"1.5"}`, `{"x":1.5000000000000001}`, `{"x":2.5}`, `{"x":25e-2}`} {
		if r := loopRun(t, s, "search", args); r.State != events.StateSuccess {
			t.Errorf("%s: %s %q; no call before meant the same", args, r.State, r.Text())
		}
	}
	if ran.get() != 9 {
		t.Errorf("ran %d, want 9", ran.get())
	}
}
