package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// typeMask is a set of JSON Schema type names.
type typeMask uint8

const (
	tNull typeMask = 1 << iota
	tBoolean
	tInteger
	tNumber
	tString
	tArray
	tObject
)

var typeBits = map[string]typeMask{
	"null": tNull, "boolean": tBoolean, "integer": tInteger, "number": tNumber,
	"string": tString, "array": tArray, "object": tObject,
}

// Numeric keyword flags.
const (
	hasMultipleOf uint8 = 1 << iota
	hasMinimum
	hasMaximum
	hasExclMin
	hasExclMax
)

// node is one compiled schema. The zero node accepts everything.
type node struct {
	trivial bool // no constraints at all: accepts every instance
	never   bool // "not" of a trivial schema (the false schema)

	hasType bool
	types   typeMask

	hasEnum  bool
	enum     []any // numbers normalised to float64
	enumText string
	hasConst bool
	constVal any
	constTxt string

	numFlags   uint8
	multipleOf float64
	minimum    float64
	maximum    float64
	exclMin    float64
	exclMax    float64

	minLength, maxLength int
	hasMinLen, hasMaxLen bool
	pattern              *regexp.Regexp

	isArray                  bool // any array keyword present
	prefix                   []*node
	items                    *node
	minItems, maxItems       int
	hasMinItems, hasMaxItems bool
	unique                   bool

	isObject                 bool // any object keyword present
	props                    []prop
	byName                   map[string]int // nil when props is short
	reqOnly                  []string       // required names without a properties entry
	additional               *node          // nil: extra properties are allowed
	allowed                  string         // property names for the "not allowed" message
	minProps, maxProps       int
	hasMinProps, hasMaxProps bool

	allOf, anyOf, oneOf []*node
	not                 *node
	anyOfTypes          typeMask // union of branch types when every branch has a type
	anyOfTyped          bool
	logic               bool // any of the four
	typeOnly            bool // no keyword but type

	// whole: a keyword about a whole array or object, which the one pass
	// checks on the value's tree (enum, const, uniqueItems, min and
	// maxProperties, required names without a property, the logic keywords).
	whole bool
	// closed: a non-trivial node looks at every value this node lets
	// through, so check meets every number in it (see Validate).
	closed bool

	// Prepare.
	hasDefault  bool
	defaultVal  any // decoded with UseNumber
	acceptsNull bool
}

type prop struct {
	name     string
	n        *node
	required bool
	// member is `{"name":default}` in canonical form when Prepare adds the
	// default for a missing property; memberB is the same as bytes.
	member  string
	memberB []byte
}

// smallProps is the property count up to which a linear scan beats a map.
const smallProps = 8

// supported reports whether every schema that validation can reach uses only
// keywords the compiled path implements. $defs are not reached without $ref.
func supported(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if s.ID != "" || s.Ref != "" || s.Anchor != "" || s.DynamicAnchor != "" || s.DynamicRef != "" ||
		s.Vocabulary != nil || s.DependencySchemas != nil || s.DependencyStrings != nil ||
		s.ItemsArray != nil || s.AdditionalItems != nil || s.Contains != nil ||
		s.MinContains != nil || s.MaxContains != nil || s.UnevaluatedItems != nil ||
		s.UnevaluatedProperties != nil || s.DependentRequired != nil || s.DependentSchemas != nil ||
		s.PatternProperties != nil || s.PropertyNames != nil || s.If != nil || s.Then != nil ||
		s.Else != nil || s.ContentSchema != nil {
		return false
	}
	for _, list := range [][]*jsonschema.Schema{s.PrefixItems, s.AllOf, s.AnyOf, s.OneOf,
		slices.Collect(maps.Values(s.Properties)), {s.Items, s.AdditionalProperties, s.Not}} {
		for _, c := range list {
			if c != nil && !supported(c) { // nil schemas: Resolve refused them
				return false
			}
		}
	}
	return true
}

// compile builds the node tree for a schema that passed supported and Resolve.
func compile(s *jsonschema.Schema) (*node, error) {
	n, err := compileNode(s)
	if err != nil {
		return nil, err
	}
	if err := n.finishDefaults(nil); err != nil {
		return nil, err
	}
	return n, nil
}

func compileNode(s *jsonschema.Schema) (*node, error) {
	n := &node{}
	var err error
	sub := func(c *jsonschema.Schema) *node {
		if err != nil {
			return nil
		}
		var cn *node
		cn, err = compileNode(c)
		return cn
	}
	subs := func(list []*jsonschema.Schema) []*node {
		if list == nil {
			return nil
		}
		out := make([]*node, len(list))
		for i, c := range list {
			out[i] = sub(c)
		}
		return out
	}

	// type: an empty list or an unknown name leaves a mask that matches
	// nothing, exactly as jsonschema-go behaves.
	if s.Type != "" {
		n.hasType = true
		n.types = typeBits[s.Type]
	} else if s.Types != nil {
		n.hasType = true
		for _, t := range s.Types {
			n.types |= typeBits[t]
		}
	}
	if s.Enum != nil {
		n.hasEnum = true
		n.enum = make([]any, len(s.Enum))
		texts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			if n.enum[i], err = normalise(e); err != nil {
				return nil, fmt.Errorf("enum: %w", err)
			}
			texts[i] = preview(n.enum[i])
		}
		n.enumText = enumList(texts)
	}
	if s.Const != nil {
		n.hasConst = true
		if n.constVal, err = normalise(*s.Const); err != nil {
			return nil, fmt.Errorf("const: %w", err)
		}
		n.constTxt = preview(n.constVal)
	}
	setF := func(p *float64, flag uint8, dst *float64) {
		if p != nil {
			n.numFlags |= flag
			*dst = *p
		}
	}
	setF(s.MultipleOf, hasMultipleOf, &n.multipleOf)
	setF(s.Minimum, hasMinimum, &n.minimum)
	setF(s.Maximum, hasMaximum, &n.maximum)
	setF(s.ExclusiveMinimum, hasExclMin, &n.exclMin)
	setF(s.ExclusiveMaximum, hasExclMax, &n.exclMax)
	setI := func(p *int, has *bool, dst *int) {
		if p != nil {
			*has = true
			*dst = *p
		}
	}
	setI(s.MinLength, &n.hasMinLen, &n.minLength)
	setI(s.MaxLength, &n.hasMaxLen, &n.maxLength)
	if s.Pattern != "" {
		// Resolve already compiled it successfully; compile our own copy.
		if n.pattern, err = regexp.Compile(s.Pattern); err != nil {
			return nil, err
		}
	}

	// arrays (draft 2020-12: items applies after prefixItems)
	n.prefix = subs(s.PrefixItems)
	if s.Items != nil {
		n.items = sub(s.Items)
	}
	setI(s.MinItems, &n.hasMinItems, &n.minItems)
	setI(s.MaxItems, &n.hasMaxItems, &n.maxItems)
	n.unique = s.UniqueItems
	if n.items != nil && n.items.trivial {
		n.items = nil
	}
	n.isArray = len(n.prefix) > 0 || n.items != nil || n.hasMinItems || n.hasMaxItems || n.unique

	// objects
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, name := range propertyOrder(s) {
		n.props = append(n.props, prop{name: name, n: sub(s.Properties[name]), required: required[name]})
	}
	if len(n.props) > smallProps {
		n.byName = make(map[string]int, len(n.props))
		for i, p := range n.props {
			n.byName[p.name] = i
		}
	}
	seen := map[string]bool{}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok && !seen[r] {
			seen[r] = true
			n.reqOnly = append(n.reqOnly, r)
		}
	}
	if s.AdditionalProperties != nil {
		n.additional = sub(s.AdditionalProperties)
		if n.additional != nil && n.additional.trivial {
			n.additional = nil
		}
	}
	names := make([]string, len(n.props))
	for i, p := range n.props {
		names[i] = p.name
	}
	n.allowed = strings.Join(names, ", ")
	setI(s.MinProperties, &n.hasMinProps, &n.minProps)
	setI(s.MaxProperties, &n.hasMaxProps, &n.maxProps)
	// Properties with trivial schemas still matter for additionalProperties,
	// so keep them whenever additional is set.
	n.isObject = len(n.props) > 0 || len(n.reqOnly) > 0 || n.additional != nil || n.hasMinProps || n.hasMaxProps

	// logic
	n.allOf = subs(s.AllOf)
	n.anyOf = subs(s.AnyOf)
	n.oneOf = subs(s.OneOf)
	if s.Not != nil {
		n.not = sub(s.Not)
	}
	if err != nil {
		return nil, err
	}
	if len(n.anyOf) > 0 {
		n.anyOfTyped = true
		for _, b := range n.anyOf {
			if !b.hasType {
				n.anyOfTyped = false
				break
			}
			n.anyOfTypes |= b.types
		}
	}

	if s.Default != nil {
		d, err := Decode(s.Default)
		if err != nil {
			return nil, fmt.Errorf("default: %w", err)
		}
		n.hasDefault = true
		n.defaultVal = d
	}

	n.logic = n.allOf != nil || n.anyOf != nil || n.oneOf != nil || n.not != nil
	if n.not != nil && n.not.trivial {
		n.never = true
	}
	n.whole = n.hasEnum || n.hasConst || n.unique || n.hasMinProps || n.hasMaxProps || len(n.reqOnly) > 0 ||
		s.AllOf != nil || s.AnyOf != nil || s.OneOf != nil || n.not != nil
	n.trivial = !n.never && !n.hasType && !n.hasEnum && !n.hasConst && n.numFlags == 0 &&
		!n.hasMinLen && !n.hasMaxLen && n.pattern == nil && !n.isArray && !n.isObject &&
		s.AllOf == nil && s.AnyOf == nil && s.OneOf == nil && n.not == nil
	n.typeOnly = n.hasType && !n.never && !n.hasEnum && !n.hasConst && n.numFlags == 0 && !n.hasMinLen && !n.hasMaxLen &&
		n.pattern == nil && !n.isArray && !n.isObject && !n.logic
	n.acceptsNull = n.check(nil, nil, nil)
	kids := append(slices.Clip(n.prefix), n.items, n.additional)
	for _, p := range n.props {
		kids = append(kids, p.n)
	}
	objOK := n.hasType && n.types&tObject == 0 || n.additional != nil && !slices.ContainsFunc(kids[len(n.prefix)+1:], open)
	arrOK := n.hasType && n.types&tArray == 0 || n.items != nil && !slices.ContainsFunc(kids[:len(n.prefix)+1], open)
	n.closed = n.never || !n.trivial && objOK && arrOK
	return n, nil
}

func open(n *node) bool { return n == nil || !n.closed }

// propertyOrder is the order the properties are shown to a model:
// PropertyOrder first, then the rest alphabetically (as Schema.MarshalJSON).
func propertyOrder(s *jsonschema.Schema) []string {
	if len(s.Properties) == 0 {
		return nil
	}
	order := make([]string, 0, len(s.Properties))
	done := make(map[string]bool, len(s.Properties))
	for _, name := range s.PropertyOrder {
		if _, ok := s.Properties[name]; ok && !done[name] {
			done[name] = true
			order = append(order, name)
		}
	}
	rest := slices.Sorted(maps.Keys(s.Properties))
	for _, name := range rest {
		if !done[name] {
			order = append(order, name)
		}
	}
	return order
}

// finishDefaults checks, wherever Prepare adds defaults, that the value it
// adds is valid (else every call that leaves the property out would fail),
// and keeps it, prepared, as text for the one pass. at is the path of n's
// values. Children go first: a default gets the defaults inside it.
func (n *node) finishDefaults(at *path) error {
	for i := range n.props {
		p := &n.props[i]
		here := &path{parent: at, key: p.name}
		if err := p.n.finishDefaults(here); err != nil {
			return err
		}
		if p.required || !p.n.hasDefault || p.n.defaultVal == nil && !p.n.acceptsNull {
			continue
		}
		text, _ := encodeTree(p.n.defaultVal)
		text, ok := p.n.prepareText(text)
		if !ok {
			c := &collector{}
			d, _ := Decode(text)
			p.n.check(d, here, c)
			return fmt.Errorf("invalid default: %s", joinProblems(c.result()))
		}
		name, _ := encodeTree(p.name)
		p.memberB = slices.Concat([]byte("{"), name, []byte(":"), text, []byte("}"))
		p.member = string(p.memberB)
	}
	for i, c := range append(slices.Clip(n.prefix), n.items, n.additional) {
		if i >= len(n.prefix) {
			i = -1 // any item or property
		}
		if c != nil {
			if err := c.finishDefaults(&path{parent: at, index: i, isIndex: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepRoot is the node the one pass walks for a schema the compiled path
// does not cover: the top-level properties that are not required, to prune
// their nulls (only when their own "type" excludes null) and add their
// defaults. The reference validator checks the rest, and each default that
// can be added, in the context of the root for its $refs.
func prepRoot(s *jsonschema.Schema) (*node, error) {
	n := &node{}
	for _, name := range propertyOrder(s) {
		ps := s.Properties[name]
		if slices.Contains(s.Required, name) {
			continue
		}
		pn := &node{trivial: true, acceptsNull: ps.Type == "null" || ps.Type == "" && (ps.Types == nil || slices.Contains(ps.Types, "null"))}
		if ps.Default != nil {
			d, err := Decode(ps.Default)
			if err != nil {
				return nil, fmt.Errorf("default: %w", err)
			}
			pn.hasDefault, pn.defaultVal = true, d
		}
		n.props = append(n.props, prop{name: name, n: pn})
	}
	if err := n.finishDefaults(nil); err != nil {
		return nil, err
	}
	for _, p := range n.props {
		probe := &jsonschema.Schema{Schema: s.Schema, ID: s.ID, Defs: s.Defs, Definitions: s.Definitions,
			Properties: map[string]*jsonschema.Schema{p.name: s.Properties[p.name]}}
		if p.member == "" {
			continue
		}
		rs, err := probe.Resolve(nil)
		if err != nil {
			continue // a $ref elsewhere than $defs: the default goes unchecked
		}
		var d any
		if err := json.Unmarshal(p.memberB, &d); err != nil {
			return nil, fmt.Errorf("invalid default: %s: %v", p.name, err)
		}
		if err := rs.Validate(d); err != nil {
			return nil, fmt.Errorf("invalid default: %s: %s", p.name, strings.TrimPrefix(err.Error(), "validating root: "))
		}
	}
	return n, nil
}

// propIndex returns the index of property k, or -1.
func (n *node) propIndex(k []byte) int {
	if n.byName != nil {
		if i, ok := n.byName[string(k)]; ok {
			return i
		}
		return -1
	}
	for i := range n.props { // most names differ in length or first byte
		if nm := n.props[i].name; len(nm) == len(k) && (len(k) == 0 || nm[0] == k[0]) && nm == string(k) {
			return i
		}
	}
	return -1
}

// normalise converts a Go value that represents JSON (a schema's enum or
// const, or a value passed to Validate) into the form json.Unmarshal gives:
// nil, bool, float64, string, []any, map[string]any.
func normalise(v any) (any, error) {
	data, err := json.Marshal(v)
	var out any
	s := pass{decoder: decoder{data: data}}
	if err == nil {
		err = s.top(nil, anyPlan, reflect.ValueOf(&out).Elem())
	}
	if err == nil && (s.invalid || s.failed) {
		err = fmt.Errorf("invalid number in %s", data)
	}
	return out, err
}
