package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

var assignFuzzSeeds = []string{
	`{"s":"x","ns":"y","b":true,"i":-1,"i8":127,"i16":-300,"i32":7,"i64":-9223372036854775808,"u":1,"u8":255,"u16":2,"u32":3,"u64":18446744073709551615,"up":4}`,
	`{"f32":1.5e38,"f64":-2.5e-300,"n":1e5,"p":3,"pp":"s","ps":{"a":1,"b":"c","l":[1,-128]}}`,
	`{"i8":300}`,
	`{"i":1e2}`,
	`{"sl":["a","b"],"bytes":"aGk=","arr":[1,2,3],"structs":[{"a":1},{}],"pstructs":[null,{"b":"x"}]}`,
	`{"map":{"a":1},"mapsl":{"x":[1],"y":null},"namedkeys":{"k":true,"j":null},"intkeys":{"1":"a"}}`,
	`{"any":{"a":[1,"x",null,true,{"b":2.5}]},"anys":[1,[]],"anymap":{"k":{}},"iface":null}`,
	`{"raw":{"b":[1, 2],"a":"<>"},"rawp":null,"raws":[1,{"x":null}]}`,
	`{"time":"2024-01-02T03:04:05Z","timep":"2024-01-02T03:04:05.123+01:00","upper":"abc","uppers":{"k":"v"},"text":"t"}`,
	`{"q":"12","qp":"true","qs":"\"quoted\"","QF":"1.25"}`,
	`{"q":12}`,
	`{"e":"emb","over":1,"deep":2,"pe":"p","pei":3,"H":4,"HP":5,"y":6,"Y":7,"z":8,"X":9,"Untagged":10,"-":11}`,
	`{"PATH":"x","S":"upper","Ns":"mixed","ſ":"long s","\u212a":1,"s":"exact"}`,
	`{"next":{"next":{"s":"deep","next":null}},"unnamed":{"V":1},"cx":null}`,
	`{"s":null,"i":null,"sl":null,"map":null,"any":null,"p":null,"inner":null,"arr":null}`,
	`[{"s":"in an array"},null,{"i":"wrong"}]`,
	`{"inner":{"a":1},"INNER":{"b":"merge"},"s":1,"s":"dup"}`,
}

// FuzzAssignMatchesUnmarshal checks that Assign of a decoded tree and
// json.Unmarshal of the same bytes agree: both fail, or both succeed with
// equal values. Objects with keys that match each other case-insensitively
// are compared against json.Marshal's sorted order, the documented
// behaviour, since the tree has lost their order.
func FuzzAssignMatchesUnmarshal(f *testing.F) {
	for _, s := range assignFuzzSeeds {
		f.Add([]byte(s))
	}
	types := []reflect.Type{reflect.TypeFor[asgAll](), reflect.TypeFor[any](), reflect.TypeFor[[]asgAll]()}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := Decode(data)
		if err != nil {
			return
		}
		ref := data
		if foldedDuplicateKeys(data) {
			if ref, err = json.Marshal(tree); err != nil {
				t.Fatalf("json.Marshal(tree): %v", err)
			}
		}
		for _, typ := range types {
			for _, fill := range []func(any){nil, asgPrefill} {
				got, errA := assignNew(typ, tree, fill)
				want, errU := unmarshalRef(typ, ref, fill)
				if (errA == nil) != (errU == nil) {
					t.Fatalf("%v (prefilled %v) from %s:\n Assign:         %v\n json.Unmarshal: %v", typ, fill != nil, ref, errA, errU)
				}
				if errA != nil {
					continue
				}
				canonicalRaw(reflect.ValueOf(got))
				canonicalRaw(reflect.ValueOf(want))
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v (prefilled %v) from %s:\n Assign:         %+v\n json.Unmarshal: %+v", typ, fill != nil, ref, got, want)
				}
			}
		}
	})
}

// asgPrefill gives an *asgAll (or the first element of a *[]asgAll) values
// for Assign to merge into or replace.
func asgPrefill(p any) {
	var a *asgAll
	switch p := p.(type) {
	case *asgAll:
		a = p
	case *[]asgAll:
		*p = make([]asgAll, 1, 3)
		a = &(*p)[0]
	case *any:
		*p = &asgInner{A: 1, B: "b"}
		return
	default:
		return
	}
	// No two pointers share a target: the tree does not keep the order in
	// which fields were written, which aliasing would make visible.
	ps := new("s")
	a.S, a.I, a.U8, a.F64 = "old", -1, 2, 0.5
	a.P, a.PP = new(1), &ps
	a.PS = &asgInner{A: 1, L: []int8{1, 2, 3}}
	a.Inner = asgInner{B: "kept", L: make([]int8, 0, 8)}
	a.Sl = make([]string, 1, 4)
	a.Bytes = []byte("xyz")
	a.Arr = [2]int{7, 8}
	a.Structs = []asgInner{{A: 1, B: "b1"}, {A: 2, L: []int8{5}}}
	a.PStructs = []*asgInner{{A: 3}}
	a.Map = map[string]int{"old": 1}
	a.MapSl = map[string][]int{"old": {1}}
	a.NamedKeys = map[asgName]*bool{"k": new(true)}
	a.Any = new(2)
	a.Anys = []any{1.0, "x"}
	a.AnyMap = map[string]any{"old": nil}
	a.Iface = asgStringer{}
	a.Raw = make(json.RawMessage, 1, 32)
	a.Time = time.Unix(1e9, 0).UTC()
	a.Upper = "OLD"
	a.Uppers = map[string]asgUpper{"old": "OLD"}
	a.Text = asgText{V: "old"}
	a.Q, a.QP = 5, new(false)
	a.IntKeys = map[int]string{1: "one"}
	a.Next = &asgAll{S: "next", Map: map[string]int{"n": 1}}
	a.AsgPEmbedded = &AsgPEmbedded{PE: "pe", PEI: new(3)}
	a.asgHiddenPtr = &asgHiddenPtr{HP: 1}
	a.AsgConfB.Z = 3
}

// canonicalRaw rewrites every json.RawMessage under v in the compact form
// Assign produces, so that only meaning is compared.
func canonicalRaw(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			canonicalRaw(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				canonicalRaw(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == rawMessageType {
			if v.IsNil() || !v.CanSet() {
				return
			}
			tree, err := Decode(v.Bytes())
			if err != nil {
				return // left as is, to show up in the comparison
			}
			b, err := encodeTree(tree)
			if err == nil {
				v.SetBytes(b)
			}
			return
		}
		for i := range v.Len() {
			canonicalRaw(v.Index(i))
		}
	}
}

// foldedDuplicateKeys reports whether an object in data has two keys that
// are equal ignoring case (or equal), whose order a decoded tree loses.
func foldedDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   []string
		inKey  bool // the next string token is a key
	}
	var stack []*frame
	value := func() { // a value ends or starts in the enclosing container
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].inKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				stack = append(stack, &frame{object: tok == '{', inKey: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if top != nil && top.object && top.inKey {
				for _, k := range top.keys {
					if strings.EqualFold(k, tok) {
						return true
					}
				}
				top.keys = append(top.keys, tok)
				top.inKey = false
				continue
			}
			value()
		default:
			value()
		}
	}
}

func TestFoldedDuplicateKeys(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1,"b":{"a":2}}`:         false,
		`{"a":1,"A":2}`:               true,
		`{"a":{"x":1,"y":[{"X":2}]}}`: false,
		`[{"k":1},{"k":2}]`:           false,
		`{"x":[{"s":1,"ſ":2}]}`:       true,
		`{"a":"a","b":"A"}`:           false,
		`{"a":{},"a":1}`:              true,
	} {
		if got := foldedDuplicateKeys([]byte(in)); got != want {
			t.Errorf("foldedDuplicateKeys(%s) = %v, want %v", in, got, want)
		}
	}
}
