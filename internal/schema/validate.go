package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// kind is the JSON type of an instance value.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// val is an instance value taken apart: its kind, its string or number
// (1 or 0 for a boolean), its array or object, and the value itself for
// messages. The one pass checks scalars without the value: it asks for no
// messages.
type val struct {
	k   kind
	s   string
	f   float64
	arr []any
	obj map[string]any
	v   any
}

// check validates v against n. With a nil collector it stops at the first
// problem and only answers valid or not (used for anyOf/oneOf/not and for the
// fast happy path); otherwise it records every problem in c.
// at is the path of v, built on the stack and rendered only for a problem.
func (n *node) check(v any, at *path, c *collector) bool {
	if n.trivial {
		return true
	}
	x := val{v: v}
	switch y := v.(type) {
	case nil:
		x.k = kNull
	case bool:
		x.k = kBool
		if y {
			x.f = 1
		}
	case string:
		x.k, x.s = kString, y
	case json.Number:
		var ok bool
		if x.f, ok = numberOf(y); !ok {
			if c != nil {
				c.add(at, badNumber(y))
			}
			return false
		}
		x.k = kNumber
	case map[string]any:
		x.k, x.obj = kObject, y
	case []any:
		x.k, x.arr = kArray, y
	default:
		var ok bool
		if x.f, ok = numberOf(v); ok {
			x.k = kNumber
			break
		}
		nv, err := normalise(v)
		if err != nil {
			if c != nil {
				c.add(at, fmt.Sprintf("is not a JSON value (Go type %T)", v))
			}
			return false
		}
		return n.check(nv, at, c)
	}
	return n.checkVal(&x, at, c)
}

func (n *node) checkVal(x *val, at *path, c *collector) bool {
	if n.trivial || n.typeOnly && typeAllows(n.types, x.k, x.f) {
		return true
	}
	if n.never {
		if c != nil {
			c.add(at, "is not allowed")
		}
		return false
	}
	if n.hasType && !typeAllows(n.types, x.k, x.f) {
		// A value of the wrong type is not looked into any further.
		if c != nil {
			c.add(at, "must be "+typePhrase(n.types)+", got "+describe(x.v))
		}
		return false
	}
	if n.hasEnum && !slices.ContainsFunc(n.enum, x.equal) {
		if c != nil {
			if len(n.enum) == 0 {
				c.add(at, "is not allowed (the schema's enum is empty)")
			} else {
				c.add(at, "must be one of "+n.enumText+"; got "+preview(x.v))
			}
		}
		return false
	}
	if n.hasConst && !x.equal(n.constVal) {
		if c != nil {
			c.add(at, "must be exactly "+n.constTxt)
		}
		return false
	}

	ok := true
	switch x.k {
	case kNumber:
		ok = n.numFlags == 0 || n.checkNumber(x.f, x.v, at, c)
	case kString:
		ok = n.checkString(x.s, at, c)
	case kArray:
		ok = !n.isArray || n.checkArray(x.arr, at, c)
	case kObject:
		ok = !n.isObject || n.checkObject(x.obj, at, c)
	}
	if !ok && c == nil || !n.logic {
		return ok
	}

	for _, b := range n.allOf {
		if !b.checkVal(x, at, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	}
	if n.anyOf != nil && !slices.ContainsFunc(n.anyOf, func(b *node) bool { return b.checkVal(x, at, nil) }) {
		if c == nil {
			return false
		}
		ok = false
		n.explainAnyOf(x, at, c)
	}
	if n.oneOf != nil {
		matched := 0
		for _, b := range n.oneOf {
			if b.checkVal(x, at, nil) {
				matched++
				if matched > 1 && c == nil {
					return false
				}
			}
		}
		if matched != 1 {
			if c == nil {
				return false
			}
			ok = false
			c.add(at, fmt.Sprintf("must match exactly one of the allowed schemas, matched %d", matched))
		}
	}
	if n.not != nil && n.not.checkVal(x, at, nil) {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must not match the excluded schema")
	}
	return ok
}

// equal is JSON equality between the value and a normalised enum or const
// value, without the value for scalars.
func (x *val) equal(e any) bool {
	switch e := e.(type) {
	case nil:
		return x.k == kNull
	case bool:
		return x.k == kBool && e == (x.f == 1)
	case string:
		return x.k == kString && e == x.s
	case float64:
		return x.k == kNumber && e == x.f
	}
	return x.k >= kArray && jsonEqual(e, x.v)
}

// explainAnyOf reports a failed anyOf. When no branch accepts the value's
// type, a type message is clearer; otherwise the first branch that accepts
// the type shows what it wanted, if it has only a few complaints.
func (n *node) explainAnyOf(x *val, at *path, c *collector) {
	if n.anyOfTyped && !typeAllows(n.anyOfTypes, x.k, x.f) {
		c.add(at, "must be "+typePhrase(n.anyOfTypes)+", got "+describe(x.v))
		return
	}
	c.add(at, "must match at least one of the allowed schemas")
	for _, b := range n.anyOf {
		if b.hasType && !typeAllows(b.types, x.k, x.f) {
			continue
		}
		var sub collector
		b.checkVal(x, at, &sub)
		if len(sub.list) <= 3 {
			c.list = append(c.list, sub.list...)
		}
		return
	}
}

// kindTypes is the type name of each kind (numbers: "number").
var kindTypes = [...]typeMask{kNull: tNull, kBool: tBoolean, kNumber: tNumber, kString: tString, kArray: tArray, kObject: tObject}

// typeAllows reports whether types m allow a value of kind k (f: its
// number). jsonschema-go: a number with a zero fractional part is an integer.
func typeAllows(m typeMask, k kind, f float64) bool {
	return m&kindTypes[k] != 0 || k == kNumber && m&tInteger != 0 && isInteger(f)
}

func isInteger(f float64) bool { return fraction(f) == 0 }

func fraction(f float64) float64 {
	_, frac := math.Modf(f)
	return frac
}

func (n *node) checkNumber(f float64, v any, at *path, c *collector) bool {
	if n.numFlags&^(hasMinimum|hasMaximum) == 0 && (n.numFlags&hasMinimum == 0 || f >= n.minimum) && (n.numFlags&hasMaximum == 0 || f <= n.maximum) {
		return true // the usual bounds, met
	}
	ok := true
	for _, b := range [...]struct {
		flag  uint8
		out   bool
		want  string
		bound float64
	}{
		// Same arithmetic as jsonschema-go, including its float rounding.
		{hasMultipleOf, fraction(f/n.multipleOf) != 0, "a multiple of ", n.multipleOf},
		{hasMinimum, f < n.minimum, ">= ", n.minimum},
		{hasMaximum, f > n.maximum, "<= ", n.maximum},
		{hasExclMin, f <= n.exclMin, "> ", n.exclMin},
		{hasExclMax, f >= n.exclMax, "< ", n.exclMax},
	} {
		if n.numFlags&b.flag != 0 && b.out {
			if c == nil {
				return false
			}
			ok = false
			c.add(at, "must be "+b.want+formatNum(b.bound)+", got "+preview(v))
		}
	}
	return ok
}

func (n *node) checkString(s string, at *path, c *collector) bool {
	ok := !(n.hasMinLen || n.hasMaxLen) || bounds(utf8.RuneCountInString(s), n.hasMinLen, n.minLength,
		n.hasMaxLen, n.maxLength, "be", " long", "character", "characters", at, c)
	if !ok && c == nil {
		return false
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must match the pattern "+n.pattern.String())
	}
	return ok
}

func (n *node) checkArray(arr []any, at *path, c *collector) bool {
	ok := bounds(len(arr), n.hasMinItems, n.minItems, n.hasMaxItems, n.maxItems, "have", "", "item", "items", at, c)
	if !ok && c == nil {
		return false
	}
	if n.unique {
		if i, j, dup := firstDuplicate(arr); dup {
			if c == nil {
				return false
			}
			ok = false
			c.add(at, fmt.Sprintf("items must be unique; items %d and %d are equal", i, j))
		}
	}
	// child is declared outside the loop so escape analysis keeps it on
	// the stack (a loop-scoped variable whose address reaches the
	// recursive call is moved to the heap).
	var child path
	for i, e := range arr {
		sn := n.items
		if i < len(n.prefix) {
			sn = n.prefix[i]
		}
		if sn == nil || sn.trivial {
			if i >= len(n.prefix) {
				break
			}
			continue
		}
		child = path{parent: at, index: i, isIndex: true}
		if !sn.check(e, &child, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	}
	return ok
}

func (n *node) checkObject(obj map[string]any, at *path, c *collector) bool {
	ok := bounds(len(obj), n.hasMinProps, n.minProps, n.hasMaxProps, n.maxProps, "have", "", "property", "properties", at, c)
	if !ok && c == nil {
		return false
	}
	found := 0
	var child path // outside the loops: see checkArray
	for i := range n.props {
		p := &n.props[i]
		val, present := obj[p.name]
		if !present {
			if p.required {
				if c == nil {
					return false
				}
				ok = false
				child = path{parent: at, key: p.name}
				c.add(&child, "is required")
			}
			continue
		}
		found++
		if p.n.trivial {
			continue
		}
		child = path{parent: at, key: p.name}
		if !p.n.check(val, &child, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	}
	for _, name := range n.reqOnly {
		if _, present := obj[name]; !present {
			if c == nil {
				return false
			}
			ok = false
			child = path{parent: at, key: name}
			c.add(&child, "is required")
		}
	}
	if n.additional == nil || found == len(obj) {
		return ok
	}
	if c == nil {
		for name, val := range obj {
			if n.propIndex([]byte(name)) < 0 && !n.additional.check(val, nil, nil) {
				return false
			}
		}
		return ok
	}
	extras := make([]string, 0, len(obj)-found)
	for name := range obj {
		if n.propIndex([]byte(name)) < 0 {
			extras = append(extras, name)
		}
	}
	slices.Sort(extras)
	for _, name := range extras {
		child = path{parent: at, key: name}
		if n.additional.never {
			ok = false
			if n.allowed == "" {
				c.add(&child, "is not an allowed property; no properties are allowed")
			} else {
				c.add(&child, "is not an allowed property; allowed: "+n.allowed)
			}
			continue
		}
		if !n.additional.check(obj[name], &child, c) {
			ok = false
		}
	}
	return ok
}

// bounds checks a count l against its bounds: "must have at least 1 item,
// got 0".
func bounds(l int, hasMin bool, lo int, hasMax bool, hi int, verb, tail, one, many string, at *path, c *collector) bool {
	ok := true
	for _, b := range [...]struct {
		out   bool
		word  string
		bound int
	}{{hasMin && l < lo, " at least ", lo}, {hasMax && l > hi, " at most ", hi}} {
		if b.out {
			if c == nil {
				return false
			}
			ok = false
			unit := many
			if b.bound == 1 || b.bound == -1 {
				unit = one
			}
			c.add(at, fmt.Sprintf("must %s%s%d %s%s, got %d", verb, b.word, b.bound, unit, tail, l))
		}
	}
	return ok
}
