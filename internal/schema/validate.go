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

// check validates v against n. With a nil collector it stops at the first
// problem and only answers valid or not (used for anyOf/oneOf/not and for the
// fast happy path); otherwise it records every problem in c.
// at is the path of v, built on the stack and rendered only for a problem.
func (n *node) check(v any, at *path, c *collector) bool {
	if n.trivial {
		return true
	}
	if n.never {
		if c != nil {
			c.add(at, "is not allowed")
		}
		return false
	}
	var (
		k   kind
		f   float64
		s   string
		arr []any
		obj map[string]any
	)
	switch x := v.(type) {
	case nil:
		k = kNull
	case bool:
		k = kBool
	case string:
		k, s = kString, x
	case json.Number:
		var ok bool
		if f, ok = numberOf(x); !ok {
			if c != nil {
				c.add(at, badNumber(x))
			}
			return false
		}
		k = kNumber
	case float64:
		k, f = kNumber, x
	case map[string]any:
		k, obj = kObject, x
	case []any:
		k, arr = kArray, x
	default:
		if nf, ok := numberOf(v); ok {
			k, f = kNumber, nf
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

	if n.hasType && !typeAllows(n.types, k, f) {
		// A value of the wrong type is not looked into any further.
		if c != nil {
			c.add(at, "must be "+typePhrase(n.types)+", got "+describe(v))
		}
		return false
	}
	if n.hasEnum && !n.inEnum(v) {
		if c != nil {
			if len(n.enum) == 0 {
				c.add(at, "is not allowed (the schema's enum is empty)")
			} else {
				c.add(at, "must be one of "+n.enumText+"; got "+preview(v))
			}
		}
		return false
	}
	if n.hasConst && !jsonEqual(n.constVal, v) {
		if c != nil {
			c.add(at, "must be exactly "+n.constTxt)
		}
		return false
	}

	ok := true
	switch k {
	case kNumber:
		if n.numFlags != 0 && !n.checkNumber(f, v, at, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	case kString:
		if !n.checkString(s, at, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	case kArray:
		if n.isArray && !n.checkArray(arr, at, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	case kObject:
		if n.isObject && !n.checkObject(obj, at, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	}

	for _, b := range n.allOf {
		if !b.check(v, at, c) {
			if c == nil {
				return false
			}
			ok = false
		}
	}
	if n.anyOf != nil {
		matched := false
		for _, b := range n.anyOf {
			if b.check(v, at, nil) {
				matched = true
				break
			}
		}
		if !matched {
			if c == nil {
				return false
			}
			ok = false
			n.explainAnyOf(v, k, f, at, c)
		}
	}
	if n.oneOf != nil {
		matched := 0
		for _, b := range n.oneOf {
			if b.check(v, at, nil) {
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
	if n.not != nil && n.not.check(v, at, nil) {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must not match the excluded schema")
	}
	return ok
}

// explainAnyOf reports a failed anyOf. When no branch accepts the value's
// type, a type message is clearer; otherwise the first branch that accepts
// the type shows what it wanted, if it has only a few complaints.
func (n *node) explainAnyOf(v any, k kind, f float64, at *path, c *collector) {
	if n.anyOfTyped && !typeAllows(n.anyOfTypes, k, f) {
		c.add(at, "must be "+typePhrase(n.anyOfTypes)+", got "+describe(v))
		return
	}
	c.add(at, "must match at least one of the allowed schemas")
	for _, b := range n.anyOf {
		if b.hasType && !typeAllows(b.types, k, f) {
			continue
		}
		var sub collector
		b.check(v, at, &sub)
		if len(sub.list) <= 3 {
			c.list = append(c.list, sub.list...)
		}
		return
	}
}

func typeAllows(m typeMask, k kind, f float64) bool {
	switch k {
	case kNull:
		return m&tNull != 0
	case kBool:
		return m&tBoolean != 0
	case kNumber:
		// jsonschema-go: a number with a zero fractional part is an integer.
		return m&tNumber != 0 || m&tInteger != 0 && isInteger(f)
	case kString:
		return m&tString != 0
	case kArray:
		return m&tArray != 0
	default:
		return m&tObject != 0
	}
}

func isInteger(f float64) bool {
	_, frac := math.Modf(f)
	return frac == 0
}

func (n *node) inEnum(v any) bool {
	for _, e := range n.enum {
		if jsonEqual(e, v) {
			return true
		}
	}
	return false
}

func (n *node) checkNumber(f float64, v any, at *path, c *collector) bool {
	ok := true
	if n.numFlags&hasMultipleOf != 0 {
		// Same arithmetic as jsonschema-go, including its float rounding.
		if _, frac := math.Modf(f / n.multipleOf); frac != 0 {
			if c == nil {
				return false
			}
			ok = false
			c.add(at, "must be a multiple of "+formatNum(n.multipleOf)+", got "+preview(v))
		}
	}
	if n.numFlags&hasMinimum != 0 && f < n.minimum {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must be >= "+formatNum(n.minimum)+", got "+preview(v))
	}
	if n.numFlags&hasMaximum != 0 && f > n.maximum {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must be <= "+formatNum(n.maximum)+", got "+preview(v))
	}
	if n.numFlags&hasExclMin != 0 && f <= n.exclMin {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must be > "+formatNum(n.exclMin)+", got "+preview(v))
	}
	if n.numFlags&hasExclMax != 0 && f >= n.exclMax {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, "must be < "+formatNum(n.exclMax)+", got "+preview(v))
	}
	return ok
}

func (n *node) checkString(s string, at *path, c *collector) bool {
	ok := true
	if n.hasMinLen || n.hasMaxLen {
		l := utf8.RuneCountInString(s)
		if n.hasMinLen && l < n.minLength {
			if c == nil {
				return false
			}
			ok = false
			c.add(at, fmt.Sprintf("must be at least %s long, got %d", plural(n.minLength, "character"), l))
		}
		if n.hasMaxLen && l > n.maxLength {
			if c == nil {
				return false
			}
			ok = false
			c.add(at, fmt.Sprintf("must be at most %s long, got %d", plural(n.maxLength, "character"), l))
		}
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
	ok := true
	if n.hasMinItems && len(arr) < n.minItems {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, fmt.Sprintf("must have at least %s, got %d", plural(n.minItems, "item"), len(arr)))
	}
	if n.hasMaxItems && len(arr) > n.maxItems {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, fmt.Sprintf("must have at most %s, got %d", plural(n.maxItems, "item"), len(arr)))
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
	ok := true
	if n.hasMinProps && len(obj) < n.minProps {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, fmt.Sprintf("must have at least %s, got %d", propsPlural(n.minProps), len(obj)))
	}
	if n.hasMaxProps && len(obj) > n.maxProps {
		if c == nil {
			return false
		}
		ok = false
		c.add(at, fmt.Sprintf("must have at most %s, got %d", propsPlural(n.maxProps), len(obj)))
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
			if !n.isProp(name) && !n.additional.check(val, nil, nil) {
				return false
			}
		}
		return ok
	}
	extras := make([]string, 0, len(obj)-found)
	for name := range obj {
		if !n.isProp(name) {
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

// isProp reports whether name is listed in properties.
func (n *node) isProp(name string) bool {
	if n.byName != nil {
		_, ok := n.byName[name]
		return ok
	}
	for i := range n.props {
		if n.props[i].name == name {
			return true
		}
	}
	return false
}

func plural(n int, word string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func propsPlural(n int) string {
	if n == 1 {
		return "1 property"
	}
	return fmt.Sprintf("%d properties", n)
}
