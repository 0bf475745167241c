package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// pass is one run of the one pass over a JSON text: it parses, checks the
// values against compiled nodes, fills a Go value and records the edits
// that turn the text into the canonical arguments, all at once, without
// building a tree. It only answers whether the arguments are acceptable;
// for any problem the caller takes the slow path, which finds and words
// every problem.
type pass struct {
	decoder
	text    string   // data as a string, made when a string is first kept
	edits   []edit   // in text order
	presets []preset // replace the root object's properties of the same name
	failed  bool     // the Go value cannot be filled here: encoding/json must
}

// edit replaces data[start:end] with text, after a comma if comma is set.
type edit struct {
	start, end int
	text       string
	comma      bool
}

// maxPassDepth is the nesting the one pass takes on; deeper arguments go to
// the slow path, so the pass needs little stack on a fresh goroutine.
const maxPassDepth = 64

// addEdit records e in text order; edits come almost always in order.
func (s *pass) addEdit(e edit) {
	i := len(s.edits)
	s.edits = append(s.edits, e)
	for ; i > 0 && s.edits[i-1].start > e.start; i-- {
		s.edits[i] = s.edits[i-1]
	}
	s.edits[i] = e
}

// splice returns data[start:end] with the edits recorded from mark on.
func (s *pass) splice(start, end, mark int) []byte {
	if len(s.edits) == mark {
		return s.data[start:end]
	}
	return applyEdits(s.data, s.edits[mark:], start, end)
}

func applyEdits(data []byte, edits []edit, start, end int) []byte {
	n := end - start
	for _, e := range edits {
		n += len(e.text) + 1
	}
	out := make([]byte, 0, n)
	for _, e := range edits {
		out = append(out, data[start:e.start]...)
		if e.comma {
			out = append(out, ',')
		}
		out = append(out, e.text...)
		start = e.end
	}
	return append(out, data[start:end]...)
}

// keep returns string text b, found at offset off of data unless esc, as a
// string the Go value may keep: a piece of one copy of the input, or a copy
// of the decoded text.
func (s *pass) keep(b []byte, esc bool, off int) string {
	if esc {
		return string(b)
	}
	if s.text == "" {
		s.text = string(s.data)
	}
	return s.text[off : off+len(b)]
}

// value takes one value at s.pos: n checks it (nil: anything goes) and it
// fills v following p (nil: nothing to fill).
func (s *pass) value(n *node, p *plan, v reflect.Value) bool {
	if s.pos >= len(s.data) {
		return false
	}
	if n != nil && n.trivial {
		n = nil
	}
	c := s.data[s.pos]
	if p != nil {
		switch p.op {
		case opPointer:
			if c == 'n' {
				v.SetZero()
				return s.scalar(n, nil, reflect.Value{})
			}
			if v.IsNil() {
				v.Set(reflect.New(p.elem.typ))
			}
			return s.value(n, p.elem, v.Elem())
		case opRaw, opAny, opFallback, opQuoted:
			start, mark := s.pos, len(s.edits)
			if !s.value(n, nil, reflect.Value{}) {
				return false
			}
			s.capture(p, v, s.splice(start, s.pos, mark))
			return true
		}
	}
	if c != '{' && c != '[' {
		return s.scalar(n, p, v)
	}
	if n != nil && (n.never || n.hasType && !typeAllows(n.types, kindOfOpen(c), 0)) {
		return false
	}
	start, mark := s.pos, len(s.edits)
	s.pos++
	if s.depth++; s.depth > maxPassDepth {
		return false
	}
	var ok bool
	if c == '{' {
		ok = s.object(n, p, v)
	} else {
		ok = s.array(n, p, v)
	}
	s.depth--
	if ok && n != nil && n.whole {
		// Keywords about the whole value look at its canonical tree.
		tree, err := Decode(s.splice(start, s.pos, mark))
		ok = err == nil && n.check(tree, nil, nil)
	}
	return ok
}

func kindOfOpen(c byte) kind {
	if c == '{' {
		return kObject
	}
	return kArray
}

// capture fills v from the canonical text of its value, for the types
// whose filling needs the text rather than values.
func (s *pass) capture(p *plan, v reflect.Value, text []byte) {
	switch p.op {
	case opRaw:
		v.SetBytes(append([]byte(nil), text...))
	case opAny:
		d := decoder{data: text, floats: true}
		if t, err := d.decode(); err != nil {
			s.failed = true
		} else if t != nil {
			v.Set(reflect.ValueOf(t))
		}
	case opQuoted:
		// Through a wrapper struct with the same tag option.
		w := reflect.New(p.typ)
		wrapped := append(append([]byte(`{"v":`), text...), '}')
		if json.Unmarshal(wrapped, w.Interface()) != nil {
			s.failed = true
		}
		v.Set(w.Elem().Field(0))
	default:
		if !v.CanAddr() || !v.Addr().CanInterface() || json.Unmarshal(text, v.Addr().Interface()) != nil {
			s.failed = true
		}
	}
}

// scalar takes a string, number, boolean or null.
func (s *pass) scalar(n *node, p *plan, v reflect.Value) bool {
	var (
		k     kind
		start = s.pos
		b     []byte // string text
		esc   bool
		f     float64 // number; 1 or 0 for booleans
		canon string  // an integral number written with a fraction or an exponent, as an integer
		err   error
	)
	switch c := s.data[s.pos]; {
	case c == '"':
		k = kString
		b, esc, err = s.strBytes()
	case c == 't':
		k, f, err = kBool, 1, s.literal("true")
	case c == 'f':
		k, err = kBool, s.literal("false")
	case c == 'n':
		k, err = kNull, s.literal("null")
	case c == '-' || isDigit(c):
		k = kNumber
		if err = s.scanNumber(); err != nil {
			break
		}
		tok := s.data[start:s.pos]
		if f, err = strconv.ParseFloat(string(tok), 64); err != nil {
			break // out of float64 range
		}
		if bytes.ContainsAny(tok, ".eE") && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			canon = strconv.FormatInt(int64(f), 10)
			s.addEdit(edit{start: start, end: s.pos, text: canon})
		}
	default:
		return false
	}
	if err != nil || n != nil && !n.scalarOK(k, b, f) {
		return false
	}
	if p == nil {
		return true
	}
	switch k {
	case kNull:
		if p.op == opSlice || p.op == opMap || p.op == opInterface {
			v.SetZero()
		}
		return true
	case kBool:
		if p.op == opBool {
			v.SetBool(f == 1)
			return true
		}
	case kString:
		switch {
		case p.op == opString, p.op == opNumber && isJSONNumber(string(b)):
			v.SetString(s.keep(b, esc, start+1))
			return true
		case p.op == opSlice && p.bytes:
			out := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
			m, err := base64.StdEncoding.Decode(out, b)
			v.SetBytes(out[:m])
			s.failed = s.failed || err != nil
			return true
		}
	case kNumber:
		num := s.data[start:s.pos]
		if canon != "" {
			num = []byte(canon)
		}
		var err error
		switch p.op {
		case opInt:
			var x int64
			x, err = strconv.ParseInt(string(num), 10, 64)
			if err == nil && !v.OverflowInt(x) {
				v.SetInt(x)
				return true
			}
		case opUint:
			var x uint64
			x, err = strconv.ParseUint(string(num), 10, 64)
			if err == nil && !v.OverflowUint(x) {
				v.SetUint(x)
				return true
			}
		case opFloat:
			var x float64
			x, err = strconv.ParseFloat(string(num), p.typ.Bits())
			if err == nil && !v.OverflowFloat(x) {
				v.SetFloat(x)
				return true
			}
		case opNumber:
			if canon == "" {
				canon = s.keep(num, false, start)
			}
			v.SetString(canon)
			return true
		}
	}
	s.failed = true // the JSON type does not fit the Go type
	return true
}

// scalarOK is check without a value, for a scalar given by its kind, its
// text (strings) and its value (numbers; 1 or 0 for booleans).
func (n *node) scalarOK(k kind, b []byte, f float64) bool {
	if n.trivial {
		return true
	}
	if n.never || n.hasType && !typeAllows(n.types, k, f) {
		return false
	}
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if found = scalarEqual(e, k, b, f); found {
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.hasConst && !scalarEqual(n.constVal, k, b, f) {
		return false
	}
	switch k {
	case kNumber:
		if n.numFlags != 0 && !n.checkNumber(f, nil, nil, nil) {
			return false
		}
	case kString:
		if n.hasMinLen || n.hasMaxLen {
			l := utf8.RuneCount(b)
			if n.hasMinLen && l < n.minLength || n.hasMaxLen && l > n.maxLength {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.Match(b) {
			return false
		}
	}
	for _, c := range n.allOf {
		if !c.scalarOK(k, b, f) {
			return false
		}
	}
	if n.anyOf != nil {
		found := false
		for _, c := range n.anyOf {
			if found = c.scalarOK(k, b, f); found {
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.oneOf != nil {
		matched := 0
		for _, c := range n.oneOf {
			if c.scalarOK(k, b, f) {
				matched++
			}
		}
		if matched != 1 {
			return false
		}
	}
	return n.not == nil || !n.not.scalarOK(k, b, f)
}

// scalarEqual compares an enum or const value (normalised) with a scalar.
func scalarEqual(e any, k kind, b []byte, f float64) bool {
	switch e := e.(type) {
	case nil:
		return k == kNull
	case bool:
		return k == kBool && e == (f == 1)
	case string:
		return k == kString && e == string(b)
	case float64:
		return k == kNumber && e == f
	}
	return false
}

// object takes an object after its '{'. It prunes the nulls and adds the
// defaults Prepare would, and at the root applies the presets.
func (s *pass) object(n *node, p *plan, v reflect.Value) bool {
	if p != nil {
		switch p.op {
		case opStruct:
		case opMap:
			if v.IsNil() {
				v.Set(reflect.MakeMap(p.typ))
			}
		default:
			s.failed, p = true, nil
		}
	}
	var (
		root      = s.depth == 1 && s.presets != nil
		seen      uint64 // properties present, the first 64
		seenMore  []bool // the others
		kept      int    // members left in the canonical text
		lastComma int    // the comma after the last member kept
		key, elem reflect.Value
	)
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return s.close(n, p, v, s.pos-1, seen, seenMore, kept)
	}
	if n != nil && len(n.props) > 64 {
		seenMore = make([]bool, len(n.props))
	}
	mark := func(i int, on bool) (was bool) {
		if i < 64 {
			was = seen&(1<<i) != 0
			if on {
				seen |= 1 << i
			} else {
				seen &^= 1 << i
			}
			return was
		}
		was, seenMore[i] = seenMore[i], on
		return was
	}
	for {
		keyStart := s.pos
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		k, kesc, err := s.strBytes()
		if err != nil {
			return false
		}
		if kesc {
			k = bytes.Clone(k)
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return false
		}
		s.pos++
		s.skipSpace()
		pi := -1
		var child *node
		if n != nil {
			if pi = n.propIndex(k); pi >= 0 {
				if mark(pi, true) {
					return false // a key twice: the slow path keeps the last one
				}
				child = n.props[pi].n
			} else {
				child = n.additional
			}
		}
		drop := false
		switch {
		case root && s.presetFor(k) != nil:
			drop = true
			m := len(s.edits)
			if !s.value(nil, nil, reflect.Value{}) {
				return false
			}
			s.edits = s.edits[:m]
		case pi >= 0 && !n.props[pi].required && !child.acceptsNull && s.pos < len(s.data) && s.data[s.pos] == 'n':
			if s.literal("null") != nil {
				return false
			}
			drop = true
			mark(pi, false) // pruned: a default may take its place
		default:
			var fp *plan
			var fv reflect.Value
			if p != nil && p.op == opStruct {
				var ok bool
				if fp, fv, ok = p.fieldValue(v, k); !ok {
					s.failed = true
				}
			} else if p != nil {
				if !key.IsValid() {
					key, elem = reflect.New(p.typ.Key()).Elem(), reflect.New(p.elem.typ).Elem()
				} else {
					elem.SetZero()
				}
				key.SetString(s.keep(k, kesc, keyStart+1))
				fp, fv = p.elem, elem
			}
			if !s.value(child, fp, fv) {
				return false
			}
			if p != nil && p.op == opMap {
				v.SetMapIndex(key, elem)
			}
		}
		end := s.pos
		s.skipSpace()
		if s.pos >= len(s.data) {
			return false
		}
		switch s.data[s.pos] {
		case ',':
			comma := s.pos
			s.pos++
			s.skipSpace()
			if drop {
				s.addEdit(edit{start: keyStart, end: s.pos}) // with its comma
			} else {
				kept, lastComma = kept+1, comma
			}
		case '}':
			s.pos++
			if drop {
				s.addEdit(edit{start: keyStart, end: end})
				if kept > 0 {
					s.addEdit(edit{start: lastComma, end: lastComma + 1})
				}
			} else {
				kept++
			}
			return s.close(n, p, v, s.pos-1, seen, seenMore, kept)
		default:
			return false
		}
	}
}

// close ends an object whose '}' is at end: required properties must be
// there, defaults and presets go in.
func (s *pass) close(n *node, p *plan, v reflect.Value, end int, seen uint64, seenMore []bool, kept int) bool {
	if n == nil {
		return true
	}
	root := s.depth == 1 && s.presets != nil
	add := func(member string, data []byte) {
		s.addEdit(edit{start: end, end: end, text: member[1 : len(member)-1], comma: kept > 0})
		kept++
		if p != nil {
			sub := pass{decoder: decoder{data: data}, text: member}
			if !sub.value(nil, p, v) || sub.failed {
				s.failed = true
			}
		}
	}
	for i := range n.props {
		pr := &n.props[i]
		if i < 64 && seen&(1<<i) != 0 || i >= 64 && seenMore[i] || root && s.presetFor([]byte(pr.name)) != nil {
			continue
		}
		if pr.required {
			return false
		}
		if pr.member != "" {
			add(pr.member, pr.memberB)
		}
	}
	if root {
		for _, pr := range s.presets {
			if pr.member != "" {
				add(pr.member, pr.memberB)
			}
		}
	}
	return true
}

func (s *pass) presetFor(k []byte) *preset {
	for i := range s.presets {
		if s.presets[i].name == string(k) {
			return &s.presets[i]
		}
	}
	return nil
}

// array takes an array after its '['.
func (s *pass) array(n *node, p *plan, v reflect.Value) bool {
	if p != nil {
		switch p.op {
		case opSlice:
			count, ok := s.count()
			if !ok {
				return false
			}
			if count == 0 {
				v.Set(p.empty)
			} else {
				v.Grow(count)
				v.SetLen(count)
			}
		case opArray:
		default:
			s.failed, p = true, nil
		}
	}
	i := 0
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
	} else {
		for {
			var child *node
			if n != nil {
				child = n.items
				if i < len(n.prefix) {
					child = n.prefix[i]
				}
			}
			var ep *plan
			var ev reflect.Value
			if p != nil && i < v.Len() {
				ep, ev = p.elem, v.Index(i)
			}
			if !s.value(child, ep, ev) {
				return false
			}
			i++
			s.skipSpace()
			if s.pos >= len(s.data) {
				return false
			}
			if s.data[s.pos] == ']' {
				s.pos++
				break
			}
			if s.data[s.pos] != ',' {
				return false
			}
			s.pos++
			s.skipSpace()
		}
	}
	return n == nil || !(n.hasMinItems && i < n.minItems || n.hasMaxItems && i > n.maxItems)
}

// count returns the number of items of the array at s.pos (after its '['),
// without moving.
func (s *pass) count() (int, bool) {
	pos, m, i := s.pos, len(s.edits), 0
	defer func() { s.pos, s.edits = pos, s.edits[:m] }()
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		return 0, true
	}
	for {
		if !s.value(nil, nil, reflect.Value{}) {
			return 0, false
		}
		i++
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ',' && s.data[s.pos] != ']' {
			return 0, false
		}
		if s.data[s.pos] == ']' {
			return i, true
		}
		s.pos++
		s.skipSpace()
	}
}
