package schema

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
)

// numberOf returns the float64 value of a JSON number in any of the Go forms
// Validate accepts. jsonschema-go sees numbers decoded without UseNumber, i.e.
// as float64, so comparing float64 values agrees with it exactly.
func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		if !isJSONNumber(string(x)) {
			return 0, false
		}
		// Out of float64 range is no number either: encoding/json refuses it.
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case float32:
		return float64(x), true
	case int, int8, int16, int32, int64: // exactly these types: others go through encoding/json
		return float64(reflect.ValueOf(x).Int()), true
	case uint, uint8, uint16, uint32, uint64, uintptr:
		return float64(reflect.ValueOf(x).Uint()), true
	}
	return 0, false
}

// isJSONNumber reports whether s is a number in JSON syntax; ParseFloat alone
// also accepts "Inf", "0x1p3" and "1_0".
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// jsonEqual is JSON Schema equality as jsonschema-go implements it: numbers
// compare by value (1 == 1.0), arrays element-wise, objects key-wise.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	fa, ok := numberOf(a)
	if !ok {
		return false
	}
	fb, ok := numberOf(b)
	return ok && fa == fb
}

// firstDuplicate finds the first item that equals an earlier one and returns
// the earlier index, the later index and true.
func firstDuplicate(arr []any) (int, int, bool) {
	if len(arr) < 2 {
		return 0, 0, false
	}
	if len(arr) <= 16 {
		for j := 1; j < len(arr); j++ {
			for i := 0; i < j; i++ {
				if jsonEqual(arr[i], arr[j]) {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	seen := make(map[uint64][]int, len(arr))
	for j, e := range arr {
		h := hashValue(e)
		for _, i := range seen[h] {
			if jsonEqual(arr[i], e) {
				return i, j, true
			}
		}
		seen[h] = append(seen[h], j)
	}
	return 0, 0, false
}

// FNV-1a constants.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func mix(h, x uint64) uint64 {
	for range 8 {
		h ^= x & 0xff
		h *= fnvPrime
		x >>= 8
	}
	return h
}

func mixString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// hashValue hashes v so that jsonEqual values hash equally.
func hashValue(v any) uint64 {
	h := uint64(fnvOffset)
	switch x := v.(type) {
	case nil:
		return mix(h, 1)
	case bool:
		if x {
			return mix(h, 2)
		}
		return mix(h, 3)
	case string:
		return mixString(mix(h, 4), x)
	case []any:
		h = mix(mix(h, 5), uint64(len(x)))
		for _, e := range x {
			h = mix(h, hashValue(e))
		}
		return h
	case map[string]any:
		// Order-independent: sum the entry hashes.
		var sum uint64
		for k, e := range x {
			sum += mix(mixString(fnvOffset, k), hashValue(e))
		}
		return mix(mix(mix(h, 6), uint64(len(x))), sum)
	}
	if f, ok := numberOf(v); ok {
		if f == 0 {
			return mix(h, 7) // -0 == 0
		}
		return mix(mix(h, 7), math.Float64bits(f))
	}
	return h
}
