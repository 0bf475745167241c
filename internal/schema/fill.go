package schema

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A plan says how the one pass fills a Go value of one type from JSON, with
// the result json.Unmarshal would give into a zero value. Types it does not
// fill itself (json.Unmarshaler and encoding.TextUnmarshaler
// implementations, `,string` fields, maps whose keys are not strings,
// channels, funcs, complex numbers) are filled by encoding/json from their
// part of the text. Plans are immutable.
type plan struct {
	op     op
	typ    reflect.Type
	elem   *plan         // pointer, slice, array and map elements; interfaces: maps
	list   *plan         // interfaces: slices
	bytes  bool          // slice of a uint8 kind: strings are base64
	empty  reflect.Value // slice: the empty non-nil slice stored for []
	fields []field       // struct, in field order
	folded map[string]int
}

type op uint8

const (
	opString op = iota
	opNumber    // json.Number
	opBool
	opInt
	opUint
	opFloat // the plain scalars end here
	opPointer
	opSlice
	opArray
	opMap
	opStruct
	opInterface // interface with methods: only null fits
	opAny       // interface{}: a tree, as json.Unmarshal makes it
	opTree      // a tree as Decode makes it: numbers are json.Number
	opRaw       // json.RawMessage: a copy of the text
	opQuoted    // a `,string` field, through a one-field wrapper struct (typ)
	opFallback  // json.Unmarshal of the value's text
)

// field is a struct field as encoding/json resolves it.
type field struct {
	name  string
	index int    // in the innermost struct
	embed []step // embedded structs to go through first
	plan  *plan
	roPtr bool // an unexported embedded pointer with a tag: cannot be allocated
}

type step struct {
	index int
	ptr   bool // the embedded field is a pointer, allocated when nil
	ro    bool // ... and unexported, so it cannot be
	elem  reflect.Type
}

type planKey struct {
	t       reflect.Type
	methods bool
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
)

var (
	treePlan = anyPlans(opTree)
	anyPlan  = anyPlans(opAny)
)

// anyPlans makes the plan of interface values of kind o, with its plans for
// the maps and slices it holds.
func anyPlans(o op) *plan {
	p := &plan{op: o, typ: reflect.TypeFor[any]()}
	p.elem = &plan{op: opMap, typ: reflect.TypeFor[map[string]any](), elem: p}
	p.list = &plan{op: opSlice, typ: reflect.TypeFor[[]any](), elem: p, empty: reflect.ValueOf([]any{})}
	return p
}

func unmarshals(t reflect.Type) bool {
	return t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType)
}

// newPlan compiles the plan for values of type t.
func newPlan(t reflect.Type) *plan {
	// Unmarshal starts from the pointer it is given, so the methods of *t
	// count even when t has no name.
	return compilePlan(t, true, map[planKey]*plan{})
}

// compilePlan returns the plan for addressable values of type t. methods
// says whether encoding/json would look for unmarshal methods on *t: it does
// for named types and at the top level, not for unnamed ones inside a value.
// Pointer types are always checked for their own methods.
func compilePlan(t reflect.Type, methods bool, memo map[planKey]*plan) *plan {
	k := planKey{t, methods}
	if p := memo[k]; p != nil {
		return p
	}
	p := &plan{typ: t}
	memo[k] = p
	sub := func(t reflect.Type, methods bool) *plan { return compilePlan(t, methods, memo) }
	switch {
	case t == rawMessageType && methods:
		p.op = opRaw
		return p
	case t.Kind() == reflect.Pointer && t.Elem() == rawMessageType:
		// RawMessage's UnmarshalJSON copies the bytes; do that natively.
		p.op, p.elem = opPointer, sub(t.Elem(), true)
		return p
	case t.Kind() == reflect.Pointer && unmarshals(t),
		t.Kind() != reflect.Pointer && methods && unmarshals(reflect.PointerTo(t)):
		p.op = opFallback
		return p
	}
	switch t.Kind() {
	case reflect.String:
		p.op = opString
		if t == jsonNumberType {
			p.op = opNumber
		}
	case reflect.Bool:
		p.op = opBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.op = opInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.op = opUint
	case reflect.Float32, reflect.Float64:
		p.op = opFloat
	case reflect.Pointer:
		// The pointer's own method set already covered *Elem.
		p.op, p.elem = opPointer, sub(t.Elem(), false)
	case reflect.Slice:
		p.op, p.elem = opSlice, sub(t.Elem(), t.Elem().Name() != "")
		p.bytes = t.Elem().Kind() == reflect.Uint8
		p.empty = reflect.MakeSlice(t, 0, 0)
	case reflect.Array:
		p.op, p.elem = opArray, sub(t.Elem(), t.Elem().Name() != "")
	case reflect.Map:
		if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			p.op = opFallback
			break
		}
		p.op, p.elem = opMap, sub(t.Elem(), t.Elem().Name() != "")
	case reflect.Struct:
		p.op = opStruct
		compileStruct(p, sub)
	case reflect.Interface:
		p.op = opInterface
		if t.NumMethod() == 0 {
			p.op, p.elem, p.list = opAny, anyPlan.elem, anyPlan.list
		}
	default: // complex, chan, func, unsafe.Pointer: let encoding/json say no
		p.op = opFallback
	}
	return p
}

func compileStruct(p *plan, sub func(reflect.Type, bool) *plan) {
	infos := jsonFields(p.typ)
	p.fields = make([]field, len(infos))
	p.folded = make(map[string]int, len(infos))
	for i, info := range infos {
		f := &p.fields[i]
		f.name = info.name
		cur := p.typ
		for _, idx := range info.index[:len(info.index)-1] {
			sf := cur.Field(idx)
			s := step{index: idx}
			cur = sf.Type
			if cur.Kind() == reflect.Pointer {
				cur = cur.Elem()
				s.ptr, s.ro, s.elem = true, !sf.IsExported(), cur
			}
			f.embed = append(f.embed, s)
		}
		sf := cur.Field(info.index[len(info.index)-1])
		f.index = sf.Index[0]
		ft := sf.Type
		switch {
		case info.quoted:
			f.plan = &plan{op: opQuoted, typ: reflect.StructOf([]reflect.StructField{{Name: "V", Type: ft, Tag: `json:"v,string"`}})}
		case !sf.IsExported() && ft.Kind() == reflect.Pointer:
			// A tagged embedded *unexported: encoding/json panics when it is
			// nil and cannot see its methods otherwise.
			f.roPtr = true
			f.plan = sub(ft.Elem(), false)
		case !sf.IsExported():
			// A tagged embedded unexported struct: its methods are invisible
			// to encoding/json (the value cannot be turned into an interface).
			f.plan = sub(ft, false)
		default:
			f.plan = sub(ft, ft.Name() != "")
		}
		k := string(appendFolded(nil, f.name))
		if _, dup := p.folded[k]; !dup { // the first field wins, as in encoding/json
			p.folded[k] = i
		}
	}
}

// bound is a node bound to a plan at Args time, so that the pass fills the
// common kinds (pass.fast) without finding out again, for every value,
// which field a key names and how its value is stored.
type bound struct {
	n     *node // nil: anything goes
	p     *plan
	elem  *bound   // pointers; slices whose items share one node
	props []*bound // structs: by property of n, nil where no field matches exactly
	field int      // of the struct that holds the value
}

// bind binds n (nil: anything goes) to p. The recursion follows n, whose
// tree is finite, and at most one pointer at a time.
func bind(n *node, p *plan) *bound {
	if n != nil && n.trivial {
		n = nil
	}
	b := &bound{n: n, p: p}
	switch {
	case p.op == opPointer && p.elem.op != opPointer:
		b.elem = bind(n, p.elem)
	case p.op == opSlice && n != nil && len(n.prefix) == 0:
		b.elem = bind(n.items, p.elem)
	case p.op == opStruct && n != nil:
		b.props = make([]*bound, len(n.props))
		for i, pr := range n.props {
			if j := p.find([]byte(pr.name)); j >= 0 && p.fields[j].embed == nil && !p.fields[j].roPtr {
				b.props[i] = bind(pr.n, p.fields[j].plan)
				b.props[i].field = p.fields[j].index
			}
		}
	}
	return b
}

// find returns the index of the field named exactly k, or -1.
func (p *plan) find(k []byte) int {
	for i := range p.fields { // most names differ in length or first byte
		if n := p.fields[i].name; len(n) == len(k) && (len(k) == 0 || n[0] == k[0]) && n == string(k) {
			return i
		}
	}
	return -1
}

// fieldValue finds the field for key k as encoding/json does and returns
// its plan and value, allocating embedded pointers on the way. ok is false
// when encoding/json must fill the struct: k matches a field only
// case-insensitively (the order of such keys matters), or the field sits
// behind an unexported nil pointer.
func (p *plan) fieldValue(v reflect.Value, k []byte) (fp *plan, fv reflect.Value, ok bool) {
	i := p.find(k)
	if i < 0 {
		_, folded := p.folded[string(appendFolded(nil, string(k)))]
		return nil, reflect.Value{}, !folded
	}
	f := &p.fields[i]
	for _, s := range f.embed {
		v = v.Field(s.index)
		if s.ptr {
			if v.IsNil() {
				if s.ro {
					return nil, reflect.Value{}, false
				}
				v.Set(reflect.New(s.elem))
			}
			v = v.Elem()
		}
	}
	v = v.Field(f.index)
	if f.roPtr {
		if v.IsNil() {
			return nil, reflect.Value{}, false
		}
		v = v.Elem()
	}
	return f.plan, v, true
}

// jsonField is a struct field found by encoding/json's rules.
type jsonField struct {
	name   string
	tagged bool
	quoted bool
	index  []int
}

// jsonFields lists the fields encoding/json decodes into, in index order,
// applying its rules: json tags (with "-" and invalid names), unexported
// fields, embedded structs explored breadth first, and Go's visibility
// rules for clashing names, modified so that a tagged field beats an
// untagged one at the same depth.
func jsonFields(t reflect.Type) []jsonField {
	type embedded struct {
		typ   reflect.Type
		index []int
	}
	var found []jsonField
	visited := map[reflect.Type]bool{}
	level, seen := []embedded{{typ: t}}, map[reflect.Type]int{}
	for len(level) > 0 {
		var next []embedded
		nextSeen := map[reflect.Type]int{}
		for _, e := range level {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					// Its fields are promoted; explore it at the next depth.
					nextSeen[ft]++
					if nextSeen[ft] == 1 {
						next = append(next, embedded{ft, index})
					}
					continue
				}
				f := jsonField{name: name, tagged: name != "", index: index}
				if f.name == "" {
					f.name = sf.Name
				}
				f.quoted = slices.Contains(strings.Split(opts, ","), "string") && quotable(ft.Kind())
				found = append(found, f)
				if seen[e.typ] > 1 {
					// The same struct embedded twice at this depth: a
					// second copy makes the clash visible below.
					found = append(found, f)
				}
			}
		}
		level, seen = next, nextSeen
	}

	slices.SortFunc(found, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	// For each name keep the shallowest field, tagged first; two equally
	// good ones hide each other.
	out := found[:0]
	for i := 0; i < len(found); {
		j := i + 1
		for j < len(found) && found[j].name == found[i].name {
			j++
		}
		if j-i == 1 || len(found[i].index) != len(found[i+1].index) || found[i].tagged != found[i+1].tagged {
			out = append(out, found[i])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// quotable reports whether `,string` applies to a field of kind k: the
// booleans, numbers (not complex) and strings.
func quotable(k reflect.Kind) bool {
	return reflect.Bool <= k && k <= reflect.Float64 || k == reflect.String
}

// validTagName is encoding/json's rule for tag names: letters, digits and
// most punctuation, but not quotes or backslashes.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", r) {
			return false
		}
	}
	return true
}

// appendFolded appends a form of s that is equal for two strings exactly
// when strings.EqualFold says so: every rune is replaced by the smallest
// rune of its case-folding orbit.
func appendFolded(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b = utf8.AppendRune(b, least)
	}
	return b
}

// encodeTree writes x as compact JSON. HTML characters are left alone, so a
// RawMessage keeps the text the model sent.
func encodeTree(x any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
