package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
	`{"structs":[{"a":1},{"a":2}],"structs":[{"b":"x"}],"arr":[1,2],"arr":[3],"sl":["a"],"sl":[]}`, // into the items that are there, as encoding/json
}

// FuzzFillMatchesUnmarshal checks the one pass's filling against
// json.Unmarshal of the canonical text: both fail, or both succeed with
// equal values. Without a schema, the pass refuses only bad syntax and
// numbers out of float64 range (which Args.Prepare reports as problems).
func FuzzFillMatchesUnmarshal(f *testing.F) {
	for _, s := range assignFuzzSeeds {
		f.Add([]byte(s))
	}
	types := []reflect.Type{reflect.TypeFor[asgAll](), reflect.TypeFor[any](), reflect.TypeFor[[]asgAll]()}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, decodeErr := Decode(data)
		for _, typ := range types {
			got, canon, native, err := fill(typ, data)
			if err == errRefused {
				if decodeErr == nil && !badNumbers(tree, nil, nil) {
					t.Fatalf("%v: the pass refuses %s", typ, data)
				}
				continue
			}
			if decodeErr != nil {
				t.Fatalf("%v: the pass accepts %s, Decode says %v", typ, data, decodeErr)
			}
			want, errU := unmarshalRef(typ, canon)
			if (err == nil) != (errU == nil) {
				t.Fatalf("%v from %s:\n fill:           %v\n json.Unmarshal: %v", typ, canon, err, errU)
			}
			if err != nil {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v from %s:\n fill:           %+v\n json.Unmarshal: %+v", typ, canon, got, want)
			}
			if !native && !foldedDuplicateKeys(data) && !caseFolded(data) {
				t.Errorf("%v: %s went to encoding/json", typ, data)
			}
		}
	})
}

// caseFolded reports whether data has a string equal to a field name of the
// fuzzed types only when case is ignored: the pass leaves such keys to
// encoding/json.
func caseFolded(data []byte) bool {
	names, folded := map[string]bool{}, map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[asgAll](), reflect.TypeFor[asgInner](), reflect.TypeFor[struct{ V int }](), reflect.TypeFor[AsgEmbedded]()} {
		for _, f := range jsonFields(typ) {
			names[f.name] = true
			folded[string(appendFolded(nil, f.name))] = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && !names[s] && folded[string(appendFolded(nil, s))] {
			return true
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
