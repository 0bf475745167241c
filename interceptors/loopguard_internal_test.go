package interceptors

import "testing"

// TestCanonicalNumber: one text per decimal value, exact at any size,
// exponents beyond int64 included (LoopGuard may see arguments the engine
// did not prepare: a call of an unknown tool).
func TestCanonicalNumber(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.000e5", "0"}, {"0e-99999999999999999999999", "0"},
		{"1", "1e0"}, {"1.0", "1e0"}, {"1e0", "1e0"}, {"10", "1e1"}, {"100", "1e2"}, {"0.1e+3", "1e2"},
		{"1.5", "15e-1"}, {"1.50", "15e-1"}, {"15e-1", "15e-1"}, {"15E-1", "15e-1"}, {"0.15e1", "15e-1"},
		{"-0.25", "-25e-2"}, {"-2.5e-1", "-25e-2"}, {"1.5000000000000001", "15000000000000001e-16"},
		{"9223372036854775807e9223372036854775807", "9223372036854775807e9223372036854775807"},
		{"10e9223372036854775807", "1e9223372036854775808"},
		{"0.1e-9223372036854775808", "1e-9223372036854775809"},
		{"1e99999999999999999999999", "1e99999999999999999999999"},
		{"100e99999999999999999999999", "1e100000000000000000000001"},
	} {
		if got := canonicalNumber(c.in); got != c.want {
			t.Errorf("canonicalNumber(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
