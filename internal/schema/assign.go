package schema

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Assigner converts decoded JSON trees (see Decode) into values of one Go type.
//
// The result is what json.Unmarshal(json.Marshal(tree)) stores, without the
// second parse: struct fields are matched as encoding/json matches them
// (exact name, then case-insensitively), numbers are range-checked the same
// way, and existing values are merged into as encoding/json does. The one
// visible difference: a json.RawMessage gets the subtree as compact JSON,
// keys sorted, without json.Marshal's HTML escaping. Types and
// fields it does not handle natively (json.Unmarshaler and
// encoding.TextUnmarshaler implementations, `,string` fields, maps whose keys
// are not strings, channels, funcs, complex numbers) go through encoding/json
// for their subtree only.
//
// A tree cannot say in which order an object's keys came; when several keys
// of one object match the same struct field (say "name" and "Name"), they are
// applied in sorted order, as json.Marshal would write them.
//
// An Assigner is immutable and safe for concurrent use.
type Assigner struct {
	typ  reflect.Type
	ptr  reflect.Type
	root *asgPlan
}

// assigners caches compiled assigners per type; they are immutable.
var assigners sync.Map // reflect.Type -> *Assigner

// NewAssigner compiles a converter for t. It never fails: types or fields it
// does not handle natively (json.Unmarshaler / encoding.TextUnmarshaler
// implementations such as time.Time, `,string` tag options, non-string map
// keys, ...) are converted by re-encoding that subtree with encoding/json and
// calling json.Unmarshal on it.
func NewAssigner(t reflect.Type) *Assigner {
	if t == nil {
		return &Assigner{}
	}
	if a, ok := assigners.Load(t); ok {
		return a.(*Assigner)
	}
	c := asgCompiler{memo: map[asgKey]*asgPlan{}}
	// Unmarshal starts from the pointer it is given, so the methods of *t
	// count even when t has no name.
	a := &Assigner{typ: t, ptr: reflect.PointerTo(t), root: c.compile(t, true)}
	got, _ := assigners.LoadOrStore(t, a)
	return got.(*Assigner)
}

// Assign stores the tree into *ptr (ptr must be a non-nil pointer to a value
// of the Assigner's type, e.g. *In). Errors read like encoding/json's and
// type errors are *json.UnmarshalTypeError naming the struct and field path.
// As with json.Unmarshal, conversion goes on after a type error, and the
// first error is returned. Strings in the tree are stored without copying.
func (a *Assigner) Assign(ptr any, tree any) error {
	if a.typ == nil {
		return errors.New("schema: Assigner has no type")
	}
	rv := reflect.ValueOf(ptr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(ptr)}
	}
	if rv.Type() != a.ptr {
		return fmt.Errorf("schema: Assign(%T) on an Assigner for %v", ptr, a.typ)
	}
	var st asgState
	a.root.assign(rv.Elem(), tree, &st)
	return st.result()
}

type asgOp uint8

const (
	opFallback asgOp = iota // json.Unmarshal of the re-encoded subtree
	opString
	opNumber // json.Number
	opBool
	opInt
	opUint
	opFloat
	opPointer
	opSlice
	opArray
	opMap
	opStruct
	opAny       // interface{}
	opInterface // interface with methods: only null fits
	opRaw       // json.RawMessage
)

// asgPlan converts a tree into addressable values of one type.
type asgPlan struct {
	op     asgOp
	typ    reflect.Type
	elem   *asgPlan      // pointer, slice, array and map elements
	bytes  bool          // slice of a uint8 kind: strings are base64
	empty  reflect.Value // slice: the empty non-nil slice stored for []
	fields []asgField    // struct, in field order
	exact  map[string]int
	folded map[string]int
}

// asgField is a struct field as encoding/json resolves it.
type asgField struct {
	name    string
	index   int       // in the innermost struct
	embed   []asgStep // embedded structs to go through first
	plan    *asgPlan
	quoted  reflect.Type // wrapper struct with a `,string` field, for fields with that option
	roPtr   bool         // an unexported embedded pointer with a tag: cannot be allocated
	errPath []string     // Field of type errors: embedded field names, then the JSON name
}

type asgStep struct {
	index int
	ptr   bool // the embedded field is a pointer, allocated when nil
	ro    bool // ... and unexported, so it cannot be
	elem  reflect.Type
}

type asgKey struct {
	t       reflect.Type
	methods bool
}

type asgCompiler struct {
	memo map[asgKey]*asgPlan
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	float64Type         = reflect.TypeFor[float64]()
)

func unmarshals(t reflect.Type) bool {
	return t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType)
}

// compile returns the plan for addressable values of type t. methods says
// whether encoding/json would look for unmarshal methods on *t: it does for
// named types and at the top level, not for unnamed ones inside a value.
// Pointer types are always checked for their own methods.
func (c *asgCompiler) compile(t reflect.Type, methods bool) *asgPlan {
	k := asgKey{t, methods}
	if p := c.memo[k]; p != nil {
		return p
	}
	p := &asgPlan{typ: t}
	c.memo[k] = p
	switch {
	case t == rawMessageType && methods:
		p.op = opRaw
		return p
	case t.Kind() == reflect.Pointer && t.Elem() == rawMessageType:
		// RawMessage's UnmarshalJSON copies the bytes; do that natively.
		p.op, p.elem = opPointer, c.compile(t.Elem(), true)
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
		p.op, p.elem = opPointer, c.compile(t.Elem(), false)
	case reflect.Slice:
		p.op, p.elem = opSlice, c.compile(t.Elem(), t.Elem().Name() != "")
		p.bytes = t.Elem().Kind() == reflect.Uint8
		p.empty = reflect.MakeSlice(t, 0, 0)
	case reflect.Array:
		p.op, p.elem = opArray, c.compile(t.Elem(), t.Elem().Name() != "")
	case reflect.Map:
		if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			p.op = opFallback
			break
		}
		p.op, p.elem = opMap, c.compile(t.Elem(), t.Elem().Name() != "")
	case reflect.Struct:
		p.op = opStruct
		c.compileStruct(p)
	case reflect.Interface:
		p.op = opInterface
		if t.NumMethod() == 0 {
			p.op = opAny
		}
	default: // complex, chan, func, unsafe.Pointer: let encoding/json say no
		p.op = opFallback
	}
	return p
}

func (c *asgCompiler) compileStruct(p *asgPlan) {
	infos := jsonFields(p.typ)
	p.fields = make([]asgField, len(infos))
	p.exact = make(map[string]int, len(infos))
	p.folded = make(map[string]int, len(infos))
	for i, info := range infos {
		f := &p.fields[i]
		f.name = info.name
		cur := p.typ
		for _, idx := range info.index[:len(info.index)-1] {
			sf := cur.Field(idx)
			s := asgStep{index: idx}
			cur = sf.Type
			if cur.Kind() == reflect.Pointer {
				cur = cur.Elem()
				s.ptr, s.ro, s.elem = true, !sf.IsExported(), cur
			}
			f.embed = append(f.embed, s)
			f.errPath = append(f.errPath, sf.Name)
		}
		f.errPath = append(f.errPath, info.name)
		sf := cur.Field(info.index[len(info.index)-1])
		f.index = sf.Index[0]
		ft := sf.Type
		switch {
		case !sf.IsExported() && ft.Kind() == reflect.Pointer:
			// A tagged embedded *unexported: encoding/json panics when it is
			// nil and cannot see its methods otherwise.
			f.roPtr = true
			f.plan = c.compile(ft.Elem(), false)
		case !sf.IsExported():
			// A tagged embedded unexported struct: its methods are invisible
			// to encoding/json (the value cannot be turned into an interface).
			f.plan = c.compile(ft, false)
		default:
			f.plan = c.compile(ft, ft.Name() != "")
		}
		if info.quoted {
			f.quoted = reflect.StructOf([]reflect.StructField{{Name: "V", Type: ft, Tag: `json:"v,string"`}})
		}
		p.exact[f.name] = i
		k := string(appendFolded(nil, f.name))
		if _, dup := p.folded[k]; !dup { // the first field wins, as in encoding/json
			p.folded[k] = i
		}
	}
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
				f.quoted = hasOption(opts, "string") && quotable(ft.Kind())
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

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// quotable reports whether `,string` applies to a field of kind k.
func quotable(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
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

// asgState collects the first error. A type error gets its struct and
// field path while the recursion unwinds, so the success path never builds
// paths.
type asgState struct {
	err   error
	te    *json.UnmarshalTypeError // err, while it still takes context
	names []string                 // te's field path, innermost first
	inner string                   // te.Field set by a nested json.Unmarshal
	named bool                     // te.Struct is final
}

func (st *asgState) fail(err error) {
	if st.err == nil {
		st.err = err
	}
}

func (st *asgState) typeError(value string, t reflect.Type) {
	if st.err == nil {
		st.te = &json.UnmarshalTypeError{Value: value, Type: t}
		st.err = st.te
	}
}

// mismatch reports a tree value of the wrong JSON type for t.
func (st *asgState) mismatch(x any, t reflect.Type) {
	if st.err != nil {
		return
	}
	var what string
	switch x.(type) {
	case bool:
		what = "bool"
	case json.Number:
		what = "number"
	case string:
		what = "string"
	case []any:
		what = "array"
	default:
		what = "object"
	}
	st.typeError(what, t)
}

// nested records an error from a nested json.Unmarshal. Its type errors
// keep the struct and field they name, below the current path.
func (st *asgState) nested(err error, clearContext bool) {
	if st.err != nil {
		return
	}
	st.err = err
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		st.te = te
		if clearContext {
			te.Struct, te.Field = "", ""
		}
		if te.Struct != "" || te.Field != "" {
			st.named, st.inner = true, te.Field
		}
	}
}

func (st *asgState) result() error {
	if st.te != nil && (st.named || len(st.names) > 0) {
		parts := make([]string, 0, len(st.names)+1)
		for i := len(st.names) - 1; i >= 0; i-- {
			parts = append(parts, st.names[i])
		}
		if st.inner != "" {
			parts = append(parts, st.inner)
		}
		st.te.Field = strings.Join(parts, ".")
	}
	return st.err
}

// assign stores tree value x into v, which is addressable and settable.
func (p *asgPlan) assign(v reflect.Value, x any, st *asgState) {
	switch p.op {
	case opPointer:
		if x == nil {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(p.elem.typ))
		}
		p.elem.assign(v.Elem(), x, st)
		return
	case opAny:
		if heldPointer(v) {
			st.fallback(v, x)
			return
		}
		if x == nil {
			v.SetZero()
			return
		}
		if val, ok := st.anyValue(x); ok {
			if val == nil {
				v.SetZero()
			} else {
				v.Set(reflect.ValueOf(val))
			}
		}
		return
	case opInterface:
		if heldPointer(v) {
			st.fallback(v, x)
			return
		}
		if x == nil {
			v.SetZero()
			return
		}
		if n, ok := x.(json.Number); ok {
			// encoding/json converts the number before it finds out.
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				st.typeError("number "+string(n), float64Type)
				return
			}
		}
		// Only null fits; what else is a tree value is a type error below.
	case opRaw:
		data, err := encodeTree(x)
		if err != nil {
			st.fail(err)
			return
		}
		// RawMessage.UnmarshalJSON reuses the existing array.
		if old := v.Bytes(); cap(old) >= len(data) {
			data = append(old[:0], data...)
		}
		v.SetBytes(data)
		return
	case opFallback:
		st.fallback(v, x)
		return
	}
	// The value kinds: each takes one JSON type (json.Number also a string,
	// a byte slice also a base64 string); any other is a type error.
	switch y := x.(type) {
	case nil:
		// null leaves a value alone but clears a slice or a map.
		if p.op == opSlice || p.op == opMap {
			v.SetZero()
		}
		return
	case bool:
		if p.op == opBool {
			v.SetBool(y)
			return
		}
	case json.Number:
		// Range checked as encoding/json does.
		switch p.op {
		case opNumber:
			v.SetString(string(y))
			return
		case opInt:
			n, err := strconv.ParseInt(string(y), 10, 64)
			if err != nil || v.OverflowInt(n) {
				st.typeError("number "+string(y), p.typ)
				return
			}
			v.SetInt(n)
			return
		case opUint:
			n, err := strconv.ParseUint(string(y), 10, 64)
			if err != nil || v.OverflowUint(n) {
				st.typeError("number "+string(y), p.typ)
				return
			}
			v.SetUint(n)
			return
		case opFloat:
			f, err := strconv.ParseFloat(string(y), p.typ.Bits())
			if err != nil || v.OverflowFloat(f) {
				st.typeError("number "+string(y), p.typ)
				return
			}
			v.SetFloat(f)
			return
		}
	case string:
		switch {
		case p.op == opString:
			v.SetString(y)
			return
		case p.op == opNumber:
			if !isJSONNumber(y) {
				st.fail(fmt.Errorf("json: invalid number literal, trying to unmarshal %q into Number", strconv.Quote(y)))
				return
			}
			v.SetString(y)
			return
		case p.op == opSlice && p.bytes:
			b, err := base64.StdEncoding.DecodeString(y)
			if err != nil {
				st.fail(err)
				return
			}
			v.SetBytes(b)
			return
		}
	case []any:
		switch p.op {
		case opSlice:
			p.assignSlice(v, y, st)
			return
		case opArray:
			n := v.Len()
			for i := 0; i < n && i < len(y); i++ {
				p.elem.assign(v.Index(i), y[i], st)
			}
			for i := len(y); i < n; i++ {
				v.Index(i).SetZero()
			}
			return
		}
	case map[string]any:
		switch p.op {
		case opStruct:
			p.assignStruct(v, y, st)
			return
		case opMap:
			p.assignMap(v, y, st)
			return
		}
	default:
		// Not a decoded tree value (a caller's own Go value).
		st.fallback(v, x)
		return
	}
	st.mismatch(x, p.typ)
}

// heldPointer reports whether interface value v holds a non-nil pointer,
// which encoding/json decodes into instead of replacing.
func heldPointer(v reflect.Value) bool {
	if v.IsNil() {
		return false
	}
	e := v.Elem()
	return e.Kind() == reflect.Pointer && !e.IsNil()
}

func (p *asgPlan) assignSlice(v reflect.Value, x []any, st *asgState) {
	n := len(x)
	if n == 0 {
		v.Set(p.empty)
		return
	}
	// Like encoding/json: decode into the existing elements, up to the
	// capacity, then into a grown copy.
	c := v.Cap()
	if n <= c {
		v.SetLen(n)
		c = n
	} else {
		v.SetLen(c)
	}
	for i := range c {
		p.elem.assign(v.Index(i), x[i], st)
	}
	if n > c {
		v.Grow(n - c)
		v.SetLen(n)
		for i := c; i < n; i++ {
			p.elem.assign(v.Index(i), x[i], st)
		}
	}
}

func (p *asgPlan) assignMap(v reflect.Value, x map[string]any, st *asgState) {
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(p.typ, len(x)))
	}
	if len(x) == 0 {
		return
	}
	key := reflect.New(p.typ.Key()).Elem()
	elem := reflect.New(p.elem.typ).Elem()
	first := true
	for k, e := range x {
		if !first {
			elem.SetZero()
		}
		first = false
		key.SetString(k)
		p.elem.assign(elem, e, st)
		v.SetMapIndex(key, elem)
	}
}

type asgHit struct {
	key   string
	field int
}

// sparseKeys is the most keys assignStruct reads by walking the object
// rather than looking up every field.
const sparseKeys = 8

type asgPair struct {
	field int
	val   any
}

func (p *asgPlan) assignStruct(v reflect.Value, x map[string]any, st *asgState) {
	matched := 0
	if n := len(x); n <= sparseKeys && 2*n < len(p.fields) {
		// Few keys, many fields: walking the object is cheaper than a
		// lookup per field. Fields are still set in field order, so the
		// first error does not depend on map order.
		var pairs [sparseKeys]asgPair
		for k, e := range x {
			i := p.find(k)
			if i < 0 {
				continue
			}
			j := matched
			for ; j > 0 && pairs[j-1].field > i; j-- {
				pairs[j] = pairs[j-1]
			}
			pairs[j] = asgPair{i, e}
			matched++
		}
		for _, pr := range pairs[:matched] {
			st.field(v, p, &p.fields[pr.field], pr.val)
		}
	} else {
		for i := range p.fields {
			f := &p.fields[i]
			if e, ok := x[f.name]; ok {
				matched++
				st.field(v, p, f, e)
			}
		}
	}
	if matched == len(x) {
		return
	}
	// Keys that differ from a field name only in case; unknown keys are
	// ignored.
	var hits []asgHit
	var buf [64]byte
	for k := range x {
		if _, ok := p.exact[k]; ok {
			continue
		}
		if i, ok := p.folded[string(appendFolded(buf[:0], k))]; ok {
			hits = append(hits, asgHit{k, i})
		}
	}
	if len(hits) == 0 {
		return
	}
	// A field matched by several keys takes them in sorted order, as if
	// the object had been written by json.Marshal.
	for _, h := range hits {
		name := p.fields[h.field].name
		if _, ok := x[name]; ok && !slices.ContainsFunc(hits, func(o asgHit) bool { return o.key == name }) {
			hits = append(hits, asgHit{name, h.field})
		}
	}
	slices.SortFunc(hits, func(a, b asgHit) int { return strings.Compare(a.key, b.key) })
	for _, h := range hits {
		st.field(v, p, &p.fields[h.field], x[h.key])
	}
}

// find returns the index of the field named exactly k, or -1.
func (p *asgPlan) find(k string) int {
	if len(p.fields) > 16 {
		if i, ok := p.exact[k]; ok {
			return i
		}
		return -1
	}
	for i := range p.fields {
		// Most names differ in length or first byte; skip the memequal call.
		if n := p.fields[i].name; len(n) == len(k) && (k == "" || n[0] == k[0]) && n == k {
			return i
		}
	}
	return -1
}

// field assigns x to field f of struct v (of plan p).
func (st *asgState) field(v reflect.Value, p *asgPlan, f *asgField, x any) {
	hadErr := st.err != nil
	for i := range f.embed {
		s := &f.embed[i]
		v = v.Field(s.index)
		if s.ptr {
			if v.IsNil() {
				if s.ro {
					st.fail(fmt.Errorf("json: cannot set embedded pointer to unexported struct: %v", s.elem))
					return
				}
				v.Set(reflect.New(s.elem))
			}
			v = v.Elem()
		}
	}
	v = v.Field(f.index)
	switch {
	case f.quoted != nil:
		st.quoted(f.quoted, v, x)
	case f.roPtr:
		if v.IsNil() {
			st.fail(fmt.Errorf("json: cannot set embedded pointer to unexported struct: %v", v.Type().Elem()))
			return
		}
		f.plan.assign(v.Elem(), x, st)
	default:
		f.plan.assign(v, x, st)
	}
	if !hadErr && st.te != nil {
		// This field is on the path to the first error.
		if !st.named {
			st.te.Struct = p.typ.Name()
			st.named = true
		}
		for i := len(f.errPath) - 1; i >= 0; i-- {
			st.names = append(st.names, f.errPath[i])
		}
	}
}

// anyValue converts x as json.Unmarshal into an interface{} does: numbers
// become float64 and containers are fresh, so callers may keep them.
func (st *asgState) anyValue(x any) (any, bool) {
	switch x := x.(type) {
	case nil, bool, string:
		return x, true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			st.typeError("number "+string(x), float64Type)
			return nil, false
		}
		return f, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i], _ = st.anyValue(e)
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k], _ = st.anyValue(e)
		}
		return out, true
	default:
		var out any
		st.fallback(reflect.ValueOf(&out).Elem(), x)
		return out, true
	}
}

// fallback converts x through encoding/json.
func (st *asgState) fallback(v reflect.Value, x any) {
	if !v.CanInterface() {
		// Reached through an unexported embedded field; encoding/json
		// cannot use such a value either.
		st.fail(fmt.Errorf("json: cannot unmarshal into unexported field of type %v", v.Type()))
		return
	}
	data, err := encodeTree(x)
	if err != nil {
		st.fail(err)
		return
	}
	if err := json.Unmarshal(data, v.Addr().Interface()); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Struct == "" && te.Field == "" && te.Type == reflect.PointerTo(v.Type()) {
			te.Type = v.Type() // the pointer is ours; encoding/json would name the value
		}
		st.nested(err, false)
	}
}

// quoted converts x into a `,string` field through a one-field wrapper
// struct with the same option, starting from the field's current value.
func (st *asgState) quoted(wrapper reflect.Type, v reflect.Value, x any) {
	data, err := encodeTree(x)
	if err != nil {
		st.fail(err)
		return
	}
	w := reflect.New(wrapper)
	w.Elem().Field(0).Set(v)
	var buf bytes.Buffer
	buf.Grow(len(data) + 6)
	buf.WriteString(`{"v":`)
	buf.Write(data)
	buf.WriteByte('}')
	err = json.Unmarshal(buf.Bytes(), w.Interface())
	v.Set(w.Elem().Field(0))
	if err != nil {
		st.nested(err, true) // the wrapper is not the caller's business
	}
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
