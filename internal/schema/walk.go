package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
)

// pass is one run of the one pass over a JSON text: it parses, checks the
// values against compiled nodes, fills a Go value and records the edits
// that make the canonical text (presets in, optional nulls out, defaults
// in, integers written as integers), at once and without a tree. It goes
// on after a value fails its schema, so the canonical text is always the
// prepared arguments; the problems are then worded from that text's tree.
type pass struct {
	decoder
	text    string // data as a string, made when a string is first needed
	edits   []edit // in text order
	presets []prop // replace the root object's properties of the same name
	bound   *bound // the top value's, if any
	invalid bool   // a value does not match its schema
	dup     bool   // a property came twice
	failed  bool   // the Go value cannot be filled here: encoding/json must
}

// edit replaces data[start:end] with text, after a comma if comma is set.
type edit struct {
	start, end int
	text       string
	comma      bool
}

// addEdit records e in text order; edits come almost always in order. It
// is rare enough to stay out of its callers' frames.
//
//go:noinline
func (s *pass) addEdit(e edit) {
	i := len(s.edits)
	s.edits = append(s.edits, e)
	for ; i > 0 && s.edits[i-1].start > e.start; i-- {
		s.edits[i] = s.edits[i-1]
	}
	s.edits[i] = e
}

// applyEdits returns data[start:end] with the edits, which lie in it.
func applyEdits(data []byte, edits []edit, start, end int) []byte {
	if len(edits) == 0 {
		return data[start:end]
	}
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
// string a Go value may keep: a piece of one copy of the input, or a copy
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

// prepareText runs the pass over text with n and returns the canonical
// text, and whether it matches n.
func (n *node) prepareText(text []byte) ([]byte, bool) {
	s := pass{decoder: decoder{data: text}}
	if s.top(n, nil, reflect.Value{}) != nil {
		return nil, false
	}
	return applyEdits(text, s.edits, 0, len(text)), !s.invalid
}

// top takes the whole text as one value.
func (s *pass) top(n *node, p *plan, v reflect.Value) error {
	if s.skipSpace(); s.pos == len(s.data) {
		return errors.New("invalid JSON: empty input")
	}
	if err := s.next(s.bound, n, p, v); err != nil {
		return err
	}
	if s.skipSpace(); s.pos < len(s.data) {
		return s.errorf("unexpected data after the top-level value")
	}
	return nil
}

// value takes one value at s.pos: n checks it (nil: anything goes) and it
// fills v following p (nil: nothing to fill). Errors are about the syntax.
func (s *pass) value(n *node, p *plan, v reflect.Value) error {
	if s.pos >= len(s.data) {
		return s.errorf("")
	}
	if n != nil && n.trivial {
		n = nil
	}
	c := s.data[s.pos]
	for ; p != nil && p.op == opPointer; p, v = p.elem, v.Elem() {
		if c == 'n' {
			v.SetZero()
			return s.scalar(n, nil, reflect.Value{})
		}
		if v.IsNil() {
			v.Set(reflect.New(p.elem.typ))
		}
	}
	if p != nil && (p.op >= opRaw || p.op >= opAny && (c == '{' || c == '[')) {
		return s.special(n, p, v, c)
	}
	if c != '{' && c != '[' {
		return s.scalar(n, p, v)
	}
	return s.composite(n, p, v, nil)
}

// fast takes the value at s.pos as value does with b's node and plan, with
// the fields and items b has found.
func (s *pass) fast(b *bound, v reflect.Value) error {
	if s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c != 'n' && b.p.op == opPointer && b.elem != nil:
			if v.IsNil() {
				v.Set(reflect.New(b.p.elem.typ))
			}
			return s.fast(b.elem, v.Elem())
		case c == '{' && b.props != nil, c == '[' && b.p.op == opSlice && b.elem != nil:
			return s.composite(b.n, b.p, v, b)
		case c != '{' && c != '[' && b.p.op <= opFloat:
			return s.scalar(b.n, b.p, v)
		}
	}
	return s.value(b.n, b.p, v)
}

// next takes a value with b (nil: as value does with n and p).
func (s *pass) next(b *bound, n *node, p *plan, v reflect.Value) error {
	if b != nil {
		return s.fast(b, v)
	}
	return s.value(n, p, v)
}

// composite takes an object or an array; b, when set, binds n and p.
func (s *pass) composite(n *node, p *plan, v reflect.Value, b *bound) error {
	// A value of the wrong type is still prepared (the problems are worded
	// from the prepared text).
	c := s.data[s.pos]
	before, k := s.invalid, kObject
	if c == '[' {
		k = kArray
	}
	s.invalid = n != nil && (n.never || n.hasType && !typeAllows(n.types, k, 0))
	start, mark := s.pos, len(s.edits)
	s.pos++
	if s.depth++; s.depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	var err error
	if c == '{' {
		err = s.object(n, p, v, b)
	} else {
		err = s.array(n, p, v, b)
	}
	s.depth--
	if err == nil && !s.invalid && n != nil && n.whole {
		s.invalid = !s.whole(n, start, mark)
	}
	s.invalid = s.invalid || before
	return err
}

// whole checks the keywords about a whole value on its canonical tree.
func (s *pass) whole(n *node, start, mark int) bool {
	tree, err := Decode(applyEdits(s.data, s.edits[mark:], start, s.pos))
	return err == nil && n.check(tree, nil, nil)
}

// special takes the values filled from their canonical text, and the maps
// and slices of interfaces.
func (s *pass) special(n *node, p *plan, v reflect.Value, c byte) error {
	if p.op == opAny || p.op == opTree {
		// A map or a slice of its own, then the interface.
		cp := p.elem
		if c == '[' {
			cp = p.list
		}
		t := reflect.New(cp.typ).Elem()
		err := s.value(n, cp, t)
		v.Set(t)
		return err
	}
	start, mark := s.pos, len(s.edits)
	if err := s.value(n, nil, reflect.Value{}); err != nil {
		return err
	}
	s.capture(p, v, applyEdits(s.data, s.edits[mark:], start, s.pos))
	return nil
}

// capture fills v from the canonical text of its value, for the types
// whose filling needs the text rather than values.
func (s *pass) capture(p *plan, v reflect.Value, text []byte) {
	switch p.op {
	case opRaw:
		v.SetBytes(append([]byte(nil), text...))
	case opQuoted:
		// Through a wrapper struct with the same tag option.
		w := reflect.New(p.typ)
		if json.Unmarshal(append(append([]byte(`{"v":`), text...), '}'), w.Interface()) != nil {
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
func (s *pass) scalar(n *node, p *plan, v reflect.Value) error {
	var (
		x     val
		start = s.pos
		b     []byte // string text, in the input unless esc
		esc   bool
		canon string // an integral number written with a fraction or an exponent, as an integer
		err   error
	)
	switch c := s.data[s.pos]; {
	case c == '"':
		x.k = kString
		b, esc, err = s.strBytes()
	case c == 't':
		x.k, x.f, err = kBool, 1, s.literal("true")
	case c == 'f':
		x.k, err = kBool, s.literal("false")
	case c == 'n':
		x.k, err = kNull, s.literal("null")
	case c == '-' || isDigit(c):
		x.k = kNumber
		if err = s.scanNumber(); err != nil {
			break
		}
		tok := s.data[start:s.pos]
		if i, ok := smallInt(tok); ok {
			x.f = float64(i)
		} else if x.f, err = strconv.ParseFloat(string(tok), 64); err != nil {
			err, s.invalid = nil, true // too large for a float64 (±Inf): see badNumbers
		} else if bytes.ContainsAny(tok, ".eE") && x.f == math.Trunc(x.f) && math.Abs(x.f) < 1<<63 {
			canon = strconv.FormatInt(int64(x.f), 10)
			s.addEdit(edit{start: start, end: s.pos, text: canon})
		}
	default:
		return s.badChar("looking for beginning of value")
	}
	if err != nil {
		return err
	}
	if x.k == kString && (n != nil || p != nil && (p.op == opString || p.op == opAny || p.op == opTree)) {
		x.s = s.keep(b, esc, start+1)
	}
	if n != nil && !n.checkVal(&x, nil, nil) {
		s.invalid = true
	}
	if p != nil && p.op == opString && x.k == kString {
		v.SetString(x.s)
	} else if p != nil {
		s.fill(p, v, &x, b, esc, start, canon)
	}
	return nil
}

// smallInt reads an integer of at most 15 digits, exact as a float64,
// without strconv.ParseFloat: its frames would grow a fresh goroutine's
// stack a second time.
func smallInt(tok []byte) (int64, bool) {
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	var n int64
	for _, c := range tok {
		if !isDigit(c) || len(tok) > 15 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, !neg || n != 0 // -0 is a float's
}

// fill stores a scalar into v, a frame of its own off the parsing path.
func (s *pass) fill(p *plan, v reflect.Value, x *val, b []byte, esc bool, start int, canon string) {
	tree := p.op == opAny || p.op == opTree
	switch x.k {
	case kNull:
		if p.op == opSlice || p.op == opMap || p.op == opInterface || tree {
			v.SetZero()
		}
		return
	case kBool:
		switch {
		case p.op == opBool:
			v.SetBool(x.f == 1)
			return
		case tree:
			v.Set(reflect.ValueOf(x.f == 1))
			return
		}
	case kString: // into a string: see scalar
		switch {
		case tree:
			v.Set(reflect.ValueOf(x.s))
			return
		case p.op == opNumber && isJSONNumber(string(b)):
			v.SetString(s.keep(b, esc, start+1))
			return
		case p.op == opSlice && p.bytes:
			out := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
			m, err := base64.StdEncoding.Decode(out, b)
			v.SetBytes(out[:m])
			s.failed = s.failed || err != nil
			return
		}
	case kNumber:
		num := s.data[start:s.pos]
		if canon != "" {
			num = []byte(canon)
		}
		var err error
		switch p.op {
		case opInt:
			i, small := smallInt(num)
			if !small {
				i, err = strconv.ParseInt(string(num), 10, 64)
			}
			if err == nil && !v.OverflowInt(i) {
				v.SetInt(i)
				return
			}
		case opUint:
			var u uint64
			if u, err = strconv.ParseUint(string(num), 10, 64); err == nil && !v.OverflowUint(u) {
				v.SetUint(u)
				return
			}
		case opFloat:
			var f float64
			if f, err = strconv.ParseFloat(string(num), p.typ.Bits()); err == nil && !v.OverflowFloat(f) {
				v.SetFloat(f)
				return
			}
		case opAny:
			if !math.IsInf(x.f, 0) {
				v.Set(reflect.ValueOf(x.f))
				return
			}
		case opNumber:
			if canon == "" {
				canon = s.keep(num, false, start)
			}
			v.SetString(canon)
			return
		case opTree: // Decode: the number as written
			v.Set(reflect.ValueOf(json.Number(s.keep(s.data[start:s.pos], false, start))))
			return
		}
	}
	s.failed = true // the JSON type does not fit the Go type
}

// object takes an object after its '{'. It prunes the nulls and adds the
// defaults Prepare would, and at the root applies the presets.
func (s *pass) object(n *node, p *plan, v reflect.Value, b *bound) error {
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
		low       [1]uint64
		seen      = low[:] // properties present, a bit each
		kept      int      // members left in the canonical text
		lastComma int      // the comma after the last member kept
		key, elem reflect.Value
	)
	if n != nil && len(n.props) > 64 {
		seen = make([]uint64, (len(n.props)+63)/64)
	}
	if s.skipSpace(); s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.close(n, p, v, s.pos-1, seen, kept)
		return nil
	}
	for {
		keyStart := s.pos
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.badChar("looking for beginning of object key string")
		}
		k, kesc, err := s.strBytes()
		if err != nil {
			return err
		}
		if kesc {
			k = bytes.Clone(k)
		}
		if s.skipSpace(); s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.badChar("after object key")
		}
		s.pos++
		s.skipSpace()
		pi, word, bit := -1, &low[0], uint64(0)
		var child *node
		if n != nil {
			if pi = n.propIndex(k); pi >= 0 {
				word, bit = &seen[uint(pi)/64], 1<<(uint(pi)%64)
				s.dup = s.dup || *word&bit != 0 // the caller starts over from the tree
				*word |= bit
				child = n.props[pi].n
			} else {
				child = n.additional
			}
		}
		drop := false
		switch {
		case root && s.presetFor(k) != nil:
			drop = true
			m, invalid := len(s.edits), s.invalid
			if err := s.value(nil, nil, reflect.Value{}); err != nil {
				return err
			}
			s.edits, s.invalid = s.edits[:m], invalid
		case s.pos < len(s.data) && s.data[s.pos] == 'n' && pi >= 0 && !n.props[pi].required && !child.acceptsNull:
			if err := s.literal("null"); err != nil {
				return err
			}
			drop = true
			*word &^= bit // pruned: a default may take its place
		case b != nil && pi >= 0 && b.props[pi] != nil:
			if err := s.fast(b.props[pi], v.Field(b.props[pi].field)); err != nil {
				return err
			}
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
			if err := s.value(child, fp, fv); err != nil {
				return err
			}
			if p != nil && p.op == opMap {
				v.SetMapIndex(key, elem)
			}
		}
		end := s.pos
		s.skipSpace()
		switch {
		case s.pos < len(s.data) && s.data[s.pos] == ',':
			comma := s.pos
			s.pos++
			s.skipSpace()
			if drop {
				s.addEdit(edit{start: keyStart, end: s.pos}) // with its comma
			} else {
				kept, lastComma = kept+1, comma
			}
		case s.pos < len(s.data) && s.data[s.pos] == '}':
			s.pos++
			if drop {
				s.addEdit(edit{start: keyStart, end: end})
				if kept > 0 {
					s.addEdit(edit{start: lastComma, end: lastComma + 1})
				}
			} else {
				kept++
			}
			s.close(n, p, v, s.pos-1, seen, kept)
			return nil
		default:
			return s.badChar("after object key:value pair")
		}
	}
}

// close ends an object whose '}' is at end: required properties must be
// there, defaults and presets go in.
func (s *pass) close(n *node, p *plan, v reflect.Value, end int, seen []uint64, kept int) {
	if n == nil {
		return
	}
	root := s.depth == 1 && s.presets != nil
	for i := range n.props {
		pr := &n.props[i]
		switch {
		case seen[uint(i)/64]&(1<<(uint(i)%64)) != 0 || root && s.presetFor([]byte(pr.name)) != nil:
		case pr.required:
			s.invalid = true
		case pr.member != "":
			kept = s.insert(pr.member, pr.memberB, p, v, end, kept)
		}
	}
	for i := 0; root && i < len(s.presets); i++ {
		if pr := &s.presets[i]; pr.member != "" {
			kept = s.insert(pr.member, pr.memberB, p, v, end, kept)
		}
	}
}

// insert adds member (`{"name":value}`, data as bytes) before the '}' at
// end, and fills it in.
func (s *pass) insert(member string, data []byte, p *plan, v reflect.Value, end, kept int) int {
	s.addEdit(edit{start: end, end: end, text: member[1 : len(member)-1], comma: kept > 0})
	if p != nil {
		// Take the member's text in place of the input, then come back.
		d, text := s.decoder, s.text
		s.decoder, s.text = decoder{data: data, depth: d.depth}, member
		s.failed = s.value(nil, p, v) != nil || s.failed
		s.decoder, s.text = d, text
	}
	return kept + 1
}

func (s *pass) presetFor(k []byte) *prop {
	for i := range s.presets {
		if s.presets[i].name == string(k) {
			return &s.presets[i]
		}
	}
	return nil
}

// array takes an array after its '['.
func (s *pass) array(n *node, p *plan, v reflect.Value, b *bound) error {
	if p != nil && p.op != opSlice && p.op != opArray {
		s.failed, p = true, nil
	}
	slice, i, eb := p != nil && p.op == opSlice, 0, (*bound)(nil) // eb: the items', when bound
	if b != nil {
		eb = b.elem
	}
	if s.skipSpace(); s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
	} else {
		for ; ; i++ {
			var child *node
			if n != nil {
				child = n.items
				if i < len(n.prefix) {
					child = n.prefix[i]
				}
			}
			if slice && i >= v.Len() { // as encoding/json: into the slice's own items first
				if i == v.Cap() {
					v.Grow(max(4, i)) // one allocation for short arrays
				}
				v.SetLen(i + 1)
			}
			var ep *plan
			var ev reflect.Value
			if p != nil && i < v.Len() {
				ep, ev = p.elem, v.Index(i)
			}
			if err := s.next(eb, child, ep, ev); err != nil {
				return err
			}
			if s.skipSpace(); s.pos < len(s.data) && s.data[s.pos] == ']' {
				s.pos++
				i++
				break
			}
			if s.pos >= len(s.data) || s.data[s.pos] != ',' {
				return s.badChar("after array element")
			}
			s.pos++
			s.skipSpace()
		}
	}
	if n != nil && (n.hasMinItems && i < n.minItems || n.hasMaxItems && i > n.maxItems) {
		s.invalid = true
	}
	switch {
	case slice && i == 0:
		v.Set(p.empty)
	case slice && i < v.Len():
		v.SetLen(i)
	case p != nil:
		for ; i < v.Len(); i++ {
			v.Index(i).SetZero() // the rest of an array
		}
	}
	return nil
}
