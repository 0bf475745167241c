package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

type asgName string

type asgInner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
	L []int8 `json:"l,omitempty"`
}

type AsgEmbedded struct {
	E    string `json:"e"`
	Over int    `json:"over"` // hidden by asgAll.Over
	Deep int    `json:"deep"`
}

type AsgPEmbedded struct {
	PE  string `json:"pe"`
	PEI *int   `json:"pei"`
}

type asgHidden struct{ H int }

type asgHiddenPtr struct{ HP int }

type AsgConfA struct {
	X int // clashes with AsgConfB.X: neither is decoded
	Y int `json:"y"`
	W int `json:"W"` // beats the untagged AsgConfB.W
}

type AsgConfB struct {
	X    int
	Y    int // "Y", not "y"
	Z    int `json:"z"`
	W    int
	Deep bool
}

type AsgDeeper struct {
	Deep  string // "Deep", clashing with AsgConfB.Deep: neither is decoded
	Inner struct {
		AsgEmbedded // only reachable as "Inner"
	}
}

// asgUpper implements json.Unmarshaler.
type asgUpper string

func (u *asgUpper) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*u = asgUpper(strings.ToUpper(s))
	return nil
}

// asgText implements encoding.TextUnmarshaler.
type asgText struct{ V string }

func (t *asgText) UnmarshalText(b []byte) error {
	if len(b) > 0 && b[0] == '!' {
		return errors.New("asgText: bang")
	}
	t.V = "<" + string(b) + ">"
	return nil
}

type asgStringer struct{}

func (asgStringer) String() string { return "" }

// asgAll has a field of every kind Assign handles, and some it hands to
// encoding/json. The fuzz target uses it too.
type asgAll struct {
	S         string              `json:"s"`
	NS        asgName             `json:"ns"`
	B         bool                `json:"b"`
	I         int                 `json:"i"`
	I8        int8                `json:"i8"`
	I16       int16               `json:"i16"`
	I32       int32               `json:"i32"`
	I64       int64               `json:"i64"`
	U         uint                `json:"u"`
	U8        uint8               `json:"u8"`
	U16       uint16              `json:"u16"`
	U32       uint32              `json:"u32"`
	U64       uint64              `json:"u64"`
	UP        uintptr             `json:"up"`
	F32       float32             `json:"f32"`
	F64       float64             `json:"f64"`
	N         json.Number         `json:"n"`
	P         *int                `json:"p"`
	PP        **string            `json:"pp"`
	PS        *asgInner           `json:"ps"`
	Inner     asgInner            `json:"inner"`
	Sl        []string            `json:"sl"`
	Bytes     []byte              `json:"bytes"`
	Arr       [2]int              `json:"arr"`
	Structs   []asgInner          `json:"structs"`
	PStructs  []*asgInner         `json:"pstructs"`
	Map       map[string]int      `json:"map"`
	MapSl     map[string][]int    `json:"mapsl"`
	NamedKeys map[asgName]*bool   `json:"namedkeys"`
	Any       any                 `json:"any"`
	Anys      []any               `json:"anys"`
	AnyMap    map[string]any      `json:"anymap"`
	Iface     fmt.Stringer        `json:"iface"`
	Raw       json.RawMessage     `json:"raw"`
	RawP      *json.RawMessage    `json:"rawp"`
	Raws      []json.RawMessage   `json:"raws"`
	Time      time.Time           `json:"time"`
	TimeP     *time.Time          `json:"timep"`
	Upper     asgUpper            `json:"upper"`
	Uppers    map[string]asgUpper `json:"uppers"`
	Text      asgText             `json:"text"`
	Q         int                 `json:"q,string"`
	QP        *bool               `json:"qp,string"`
	QS        string              `json:"qs,string"`
	QF        float32             `json:",string"`
	IntKeys   map[int]string      `json:"intkeys"`
	Cx        complex128          `json:"cx"`
	Unnamed   struct{ V int }     `json:"unnamed"`
	Next      *asgAll             `json:"next"`
	Over      int                 `json:"over"`
	Skip      int                 `json:"-"`
	Dash      int                 `json:"-,"`
	Untagged  int
	unexp     int
	AsgEmbedded
	*AsgPEmbedded
	asgHidden
	*asgHiddenPtr
	AsgConfA
	AsgConfB
	AsgDeeper
}

// unmarshalRef runs json.Unmarshal into a new value of t, prefilled if
// fill is set.
func unmarshalRef(t reflect.Type, data []byte, fill func(any)) (any, error) {
	p := reflect.New(t).Interface()
	if fill != nil {
		fill(p)
	}
	err := json.Unmarshal(data, p)
	return p, err
}

func assignNew(t reflect.Type, tree any, fill func(any)) (any, error) {
	p := reflect.New(t).Interface()
	if fill != nil {
		fill(p)
	}
	err := NewAssigner(t).Assign(p, tree)
	return p, err
}

func TestAssign(t *testing.T) {
	type In struct {
		Path  string   `json:"path"`
		Limit int      `json:"limit,omitempty"`
		Exts  []string `json:"exts,omitempty"`
		Deep  *bool    `json:"deep,omitempty"`
	}
	type Outer struct {
		In    In            `json:"in"`
		Items []In          `json:"items"`
		ByKey map[string]In `json:"by_key"`
	}
	type WithTime struct {
		When  time.Time  `json:"when"`
		WhenP *time.Time `json:"whenp"`
	}
	allType := reflect.TypeFor[asgAll]()
	fillAll := func(p any) {
		a := p.(*asgAll)
		a.S, a.I, a.P = "old", 7, new(int)
		a.Sl = make([]string, 1, 4)
		a.Sl[0] = "keep?"
		a.Structs = []asgInner{{A: 1, B: "b1", L: []int8{1, 2}}, {A: 2, B: "b2"}}
		a.Map = map[string]int{"old": 1, "x": 2}
		a.Arr = [2]int{5, 6}
		a.PS = &asgInner{B: "kept"}
		a.Any = map[string]any{"old": true}
		a.Raw = make(json.RawMessage, 0, 64)
		a.Bytes = []byte("old")
	}
	fillAnyPtr := func(p any) {
		n := 5
		p.(*asgAll).Any = &n // encoding/json decodes into the pointer it finds
	}
	tests := []struct {
		name  string
		typ   reflect.Type
		input string
		fill  func(any)
		err   string // substring of Assign's error; "" means success
	}{
		// Scalars.
		{name: "string", typ: allType, input: `{"s":"héllo","ns":"named"}`},
		{name: "bool", typ: allType, input: `{"b":true}`},
		{name: "ints", typ: allType, input: `{"i":-9007199254740993,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807}`},
		{name: "uints", typ: allType, input: `{"u":18446744073709551615,"u8":255,"u16":65535,"u32":4294967295,"u64":0,"up":12}`},
		{name: "floats", typ: allType, input: `{"f32":3.4028234e38,"f64":1e308,"QF":"1.5"}`},
		{name: "float tiny", typ: allType, input: `{"f32":1e-50,"f64":-0}`},
		{name: "json.Number", typ: allType, input: `{"n":1.50e+3}`},
		{name: "json.Number from string", typ: allType, input: `{"n":"-0.5"}`},
		{name: "json.Number bad string", typ: allType, input: `{"n":"12a"}`, err: "invalid number literal"},
		{name: "int8 overflow", typ: allType, input: `{"i8":300}`, err: "json: cannot unmarshal number 300 into Go struct field asgAll.i8 of type int8"},
		{name: "uint negative", typ: allType, input: `{"u":-1}`, err: "number -1 into Go struct field asgAll.u of type uint"},
		{name: "uint minus zero", typ: allType, input: `{"u8":-0}`, err: "number -0"},
		{name: "int exponent", typ: allType, input: `{"i":1e2}`, err: "json: cannot unmarshal number 1e2 into Go struct field asgAll.i of type int"},
		{name: "int fraction", typ: allType, input: `{"i64":2.0}`, err: "number 2.0"},
		{name: "int64 overflow", typ: allType, input: `{"i64":9223372036854775808}`, err: "number 9223372036854775808"},
		{name: "float32 overflow", typ: allType, input: `{"f32":3.5e38}`, err: "number 3.5e38 into Go struct field asgAll.f32 of type float32"},
		{name: "float64 overflow", typ: allType, input: `{"f64":1e400}`, err: "number 1e400"},
		{name: "string into int", typ: reflect.TypeFor[In](), input: `{"path":"/","limit":"ten"}`, err: "json: cannot unmarshal string into Go struct field In.limit of type int"},
		{name: "number into string", typ: allType, input: `{"s":1}`, err: "cannot unmarshal number into Go struct field asgAll.s of type string"},
		{name: "bool into float", typ: allType, input: `{"f64":true}`, err: "cannot unmarshal bool into Go struct field asgAll.f64 of type float64"},
		{name: "object into bool", typ: allType, input: `{"b":{}}`, err: "cannot unmarshal object into Go struct field asgAll.b of type bool"},
		{name: "array into string", typ: allType, input: `{"s":[]}`, err: "cannot unmarshal array into Go struct field asgAll.s of type string"},
		{name: "nulls leave values", typ: allType, input: `{"s":null,"i":null,"b":null,"arr":null,"inner":null,"f32":null,"n":null,"time":null,"text":null}`, fill: fillAll},

		// Pointers.
		{name: "pointers", typ: allType, input: `{"p":5,"pp":"x","ps":{"a":1}}`},
		{name: "pointer reused", typ: allType, input: `{"ps":{"a":1}}`, fill: fillAll},
		{name: "null pointers", typ: allType, input: `{"p":null,"pp":null,"ps":null}`, fill: fillAll},
		{name: "pointer type error", typ: allType, input: `{"p":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.p of type int"},

		// Slices, arrays, maps.
		{name: "slices", typ: allType, input: `{"sl":["a","b"],"structs":[{"a":1,"l":[1,-2]},{"b":"x"}],"pstructs":[{"a":3},null]}`},
		{name: "empty slices", typ: allType, input: `{"sl":[],"structs":[],"bytes":""}`},
		{name: "null slices", typ: allType, input: `{"sl":null,"structs":null,"bytes":null}`, fill: fillAll},
		{name: "slices merge into existing elements", typ: allType, input: `{"sl":["a","b","c"],"structs":[{"a":9}]}`, fill: fillAll},
		{name: "slices grow past capacity", typ: allType, input: `{"sl":["a","b","c","d","e"],"structs":[{"a":9},{"l":[3]},{"a":3}]}`, fill: fillAll},
		{name: "slice element error", typ: allType, input: `{"structs":[{"a":1},{"a":"x"}]}`, err: "cannot unmarshal string into Go struct field asgInner.structs.a of type int"},
		{name: "bytes base64", typ: allType, input: `{"bytes":"aGVsbG8="}`, fill: fillAll},
		{name: "bytes as numbers", typ: allType, input: `{"bytes":[1,2,255]}`},
		{name: "bytes bad base64", typ: allType, input: `{"bytes":"!!"}`, err: "illegal base64"},
		{name: "string into slice", typ: allType, input: `{"sl":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.sl of type []string"},
		{name: "array extra dropped", typ: allType, input: `{"arr":[1,2,"not checked"]}`},
		{name: "array missing zeroed", typ: allType, input: `{"arr":[1]}`, fill: fillAll},
		{name: "maps", typ: allType, input: `{"map":{"a":1,"b":2},"mapsl":{"x":[1,2],"y":[],"z":null},"namedkeys":{"k":true,"n":null}}`},
		{name: "map keeps entries", typ: allType, input: `{"map":{"x":5,"y":6}}`, fill: fillAll},
		{name: "map null", typ: allType, input: `{"map":null}`, fill: fillAll},
		{name: "map element error", typ: allType, input: `{"map":{"a":"x"}}`, err: "cannot unmarshal string into Go struct field asgAll.map of type int"},
		{name: "array into map", typ: allType, input: `{"map":[]}`, err: "cannot unmarshal array into Go struct field asgAll.map of type map[string]int"},

		// Interfaces.
		{name: "any", typ: allType, input: `{"any":{"a":[1,2.5,"x",true,null,{"b":-1e3}]},"anys":[1,[2],{}],"anymap":{"k":1}}`},
		{name: "any replaces", typ: allType, input: `{"any":[1]}`, fill: fillAll},
		{name: "any null", typ: allType, input: `{"any":null}`, fill: fillAll},
		{name: "any holding pointer", typ: allType, input: `{"any":12}`, fill: fillAnyPtr},
		{name: "any holding pointer, wrong type", typ: allType, input: `{"any":"x"}`, fill: fillAnyPtr, err: "cannot unmarshal string"},
		{name: "any float overflow", typ: allType, input: `{"any":[1e999]}`, err: "cannot unmarshal number 1e999 into Go struct field asgAll.any of type float64"},
		{name: "interface with methods", typ: allType, input: `{"iface":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.iface of type fmt.Stringer"},
		{name: "interface with methods, null", typ: allType, input: `{"iface":null}`},
		{name: "interface with methods, holding value", typ: allType, input: `{"iface":null}`, fill: func(p any) { p.(*asgAll).Iface = asgStringer{} }},
		{name: "top-level any", typ: reflect.TypeFor[any](), input: `{"a":[1,{"b":null}]}`},
		{name: "top-level map", typ: reflect.TypeFor[map[string][]float32](), input: `{"a":[1,2],"b":null}`},
		{name: "top-level slice", typ: reflect.TypeFor[[]*int](), input: `[1,null,3]`},
		{name: "top-level null", typ: reflect.TypeFor[*In](), input: `null`},

		// Struct fields.
		{name: "case-insensitive keys", typ: reflect.TypeFor[In](), input: `{"PATH":"/x","Limit":3,"EXTS":["a"],"dEEp":false,"unknown":1}`},
		{name: "case-insensitive unicode", typ: allType, input: `{"ſ":"long s","\u212a":1}`},
		{name: "exact name wins over folded", typ: reflect.TypeFor[In](), input: `{"Path":"folded","path":"exact"}`},
		{name: "embedded", typ: allType, input: `{"e":"emb","over":1,"deep":2,"pe":"p","pei":3,"H":4,"y":5,"Y":6,"z":7,"X":8,"W":9,"Inner":{"e":"in","deep":1}}`},
		{name: "embedded pointer allocated for null", typ: allType, input: `{"pe":null}`},
		{name: "unexported embedded pointer", typ: allType, input: `{"HP":1}`, err: "cannot set embedded pointer to unexported struct"},
		{name: "ignored fields", typ: allType, input: `{"Skip":1,"-":2,"unexp":3,"Untagged":4,"untagged":5}`},
		{name: "nested", typ: reflect.TypeFor[Outer](), input: `{"in":{"path":"a","exts":["x"]},"items":[{"path":"b","deep":true},{"limit":2}],"by_key":{"k":{"path":"c"},"l":{}}}`},
		{name: "nested error path", typ: reflect.TypeFor[Outer](), input: `{"by_key":{"k":{"deep":1}}}`, err: "cannot unmarshal number into Go struct field In.by_key.deep of type bool"},
		{name: "embedded error path", typ: allType, input: `{"pei":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.AsgPEmbedded.pei of type int"},
		{name: "unnamed struct error path", typ: allType, input: `{"unnamed":{"V":"x"}}`, err: "Go struct field .unnamed.V of type int"},
		{name: "recursive", typ: allType, input: `{"next":{"next":{"s":"deep","inner":{"a":1}}}}`},
		{name: "struct from array", typ: allType, input: `{"inner":[1]}`, err: "cannot unmarshal array into Go struct field asgAll.inner of type schema.asgInner"},
		{name: "first error wins, rest filled", typ: allType, input: `{"i":"x","s":"ok"}`, err: "asgAll.i of type int"},

		// Raw messages.
		{name: "raw", typ: allType, input: `{"raw":{"a":[1,2.50,"x"],"b":null},"rawp":true,"raws":[1,"2",null]}`},
		{name: "raw null", typ: allType, input: `{"raw":null,"rawp":null}`, fill: fillAll},
		{name: "raw reuses array", typ: allType, input: `{"raw":"<&>"}`, fill: fillAll},

		// Handed to encoding/json.
		{name: "time", typ: reflect.TypeFor[WithTime](), input: `{"when":"2024-05-06T07:08:09.5+02:00","whenp":"2001-01-01T00:00:00Z"}`},
		{name: "time null", typ: reflect.TypeFor[WithTime](), input: `{"when":null,"whenp":null}`},
		{name: "time bad", typ: reflect.TypeFor[WithTime](), input: `{"when":"yesterday"}`, err: "parsing time"},
		{name: "time wrong type", typ: reflect.TypeFor[WithTime](), input: `{"whenp":5}`, err: "Time.UnmarshalJSON: input is not a JSON string"},
		{name: "UnmarshalJSON", typ: allType, input: `{"upper":"abc","uppers":{"k":"v"}}`},
		{name: "UnmarshalJSON error", typ: allType, input: `{"upper":1}`, err: "json: cannot unmarshal number into Go struct field asgAll.upper of type string"},
		{name: "UnmarshalText", typ: allType, input: `{"text":"t"}`},
		{name: "UnmarshalText error", typ: allType, input: `{"text":"!"}`, err: "bang"},
		{name: "UnmarshalText wrong type", typ: allType, input: `{"text":1}`, err: "cannot unmarshal number into Go struct field asgAll.text of type schema.asgText"},
		{name: "string option", typ: allType, input: `{"q":"12","qp":"true","qs":"\"x\"","QF":"2.5"}`},
		{name: "string option null", typ: allType, input: `{"q":null,"qp":null}`, fill: func(p any) { p.(*asgAll).QP = new(bool) }},
		{name: "string option unquoted", typ: allType, input: `{"q":12}`, err: "invalid use of ,string struct tag"},
		{name: "string option overflow", typ: allType, input: `{"q":"1e2"}`, err: "json: cannot unmarshal number 1e2 into Go struct field asgAll.q of type int"},
		{name: "int keys", typ: allType, input: `{"intkeys":{"1":"a","-2":"b"}}`},
		{name: "int keys bad", typ: allType, input: `{"intkeys":{"x":"a"}}`, err: "cannot unmarshal number x into Go struct field asgAll.intkeys of type int"},
		{name: "complex", typ: allType, input: `{"cx":1}`, err: "cannot unmarshal number into Go struct field asgAll.cx of type complex128"},
		{name: "complex null", typ: allType, input: `{"cx":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := Decode([]byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			got, err := assignNew(tc.typ, tree, tc.fill)
			want, wantErr := unmarshalRef(tc.typ, []byte(tc.input), tc.fill)
			if tc.err == "" {
				if err != nil || wantErr != nil {
					t.Fatalf("Assign: %v; json.Unmarshal: %v", err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Assign and json.Unmarshal differ:\n got  %+v\n want %+v", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Assign error = %v, want it to contain %q", err, tc.err)
			}
			if wantErr == nil {
				t.Fatalf("json.Unmarshal succeeds, Assign fails with %v", err)
			}
		})
	}
}

// TestAssignErrorsMatch checks that single type errors read exactly as
// encoding/json's.
func TestAssignErrorsMatch(t *testing.T) {
	type In struct {
		Limit int `json:"limit"`
	}
	cases := []struct {
		typ   reflect.Type
		input string
	}{
		{reflect.TypeFor[In](), `{"limit":"x"}`},
		{reflect.TypeFor[In](), `{"limit":1.5}`},
		{reflect.TypeFor[In](), `[]`},
		{reflect.TypeFor[int](), `"x"`},
		{reflect.TypeFor[[]int8](), `[1,200]`},
		{reflect.TypeFor[asgAll](), `{"i8":300}`},
		{reflect.TypeFor[asgAll](), `{"next":{"inner":{"l":[1000]}}}`},
		{reflect.TypeFor[asgAll](), `{"mapsl":{"a":[true]}}`},
		{reflect.TypeFor[asgAll](), `{"pei":"x"}`},
		{reflect.TypeFor[asgAll](), `{"z":"x"}`},
		{reflect.TypeFor[asgAll](), `{"upper":1}`},
		{reflect.TypeFor[asgAll](), `{"timep":{}}`},
		{reflect.TypeFor[asgAll](), `{"intkeys":{"a":"b"}}`},
		{reflect.TypeFor[asgAll](), `{"uppers":{"a":[]}}`},
		{reflect.TypeFor[asgAll](), `{"any":1e400}`},
		{reflect.TypeFor[asgAll](), `{"iface":1}`},
		{reflect.TypeFor[asgAll](), `{"iface":1e400}`},
		{reflect.TypeFor[asgAll](), `{"q":"300.5"}`},
		{reflect.TypeFor[asgAll](), `{"text":true}`},
		{reflect.TypeFor[asgAll](), `{"unnamed":{"v":[]}}`},
		{reflect.TypeFor[map[string]*asgInner](), `{"k":{"a":"1"}}`},
	}
	for _, tc := range cases {
		tree, err := Decode([]byte(tc.input))
		if err != nil {
			t.Fatal(err)
		}
		_, err = assignNew(tc.typ, tree, nil)
		_, want := unmarshalRef(tc.typ, []byte(tc.input), nil)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%v %s:\n Assign         %v\n json.Unmarshal %v", tc.typ, tc.input, err, want)
		}
		var te *json.UnmarshalTypeError
		if errors.As(want, &te) != errors.As(err, &te) {
			t.Errorf("%v %s: error types %T and %T", tc.typ, tc.input, err, want)
		}
	}
}

// TestAssignKeyOrder: keys that match the same field apply in sorted order,
// as in json.Unmarshal(json.Marshal(tree)).
func TestAssignKeyOrder(t *testing.T) {
	type Inner struct{ A, B int }
	type T struct {
		Name  string `json:"name"`
		Inner Inner  `json:"inner"`
		Big   int    `json:"Big"`
	}
	for _, input := range []string{
		`{"name":"exact","NAME":"upper"}`,
		`{"nAme":"mixed","NAME":"upper"}`,
		`{"Big":1,"big":2}`,
		`{"BIG":1,"big":2}`,
		`{"inner":{"A":1},"INNER":{"B":2}}`,
		`{"Inner":{"A":1,"B":3},"INNER":{"B":2}}`,
	} {
		tree, err := Decode([]byte(input))
		if err != nil {
			t.Fatal(err)
		}
		sorted, _ := json.Marshal(tree)
		got, err := assignNew(reflect.TypeFor[T](), tree, nil)
		want, wantErr := unmarshalRef(reflect.TypeFor[T](), sorted, nil)
		if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Assign %+v (%v), json.Unmarshal of %s %+v (%v)", input, got, err, sorted, want, wantErr)
		}
	}
}

// TestAssignSliceAliasing: like encoding/json, Assign writes into the
// existing backing array when it is large enough.
func TestAssignSliceAliasing(t *testing.T) {
	type T struct{ S []int }
	backing := make([]int, 0, 4)
	v := T{S: backing}
	tree, _ := Decode([]byte(`{"S":[1,2]}`))
	if err := NewAssigner(reflect.TypeFor[T]()).Assign(&v, tree); err != nil {
		t.Fatal(err)
	}
	if &v.S[0] != &backing[:1][0] || backing[:2][1] != 2 {
		t.Errorf("slice not decoded in place: %v, backing %v", v.S, backing[:2])
	}
	backing2 := []int{1}
	ref := T{S: backing2}
	v = T{S: backing2}
	tree, _ = Decode([]byte(`{"S":[7,8,9]}`))
	_ = json.Unmarshal([]byte(`{"S":[7,8,9]}`), &ref)
	if err := NewAssigner(reflect.TypeFor[T]()).Assign(&v, tree); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, ref) || backing2[0] != 7 {
		t.Errorf("grown slice: %v, want %v; old array %v", v, ref, backing2)
	}
}

// TestAssignAnyIsFresh: values stored in interface{} fields do not share
// containers with the tree, which the caller may reuse.
func TestAssignAnyIsFresh(t *testing.T) {
	type T struct{ X any }
	tree, _ := Decode([]byte(`{"X":{"a":["s"]}}`))
	var v T
	if err := NewAssigner(reflect.TypeFor[T]()).Assign(&v, tree); err != nil {
		t.Fatal(err)
	}
	tree.(map[string]any)["X"].(map[string]any)["a"].([]any)[0] = "changed"
	if got := v.X.(map[string]any)["a"].([]any)[0]; got != "s" {
		t.Errorf("X shares the tree: %v", got)
	}
}

// TestAssignUnexportedEmbeddedPointer: encoding/json panics on a nil tagged
// embedded pointer to an unexported type; Assign reports an error, and
// decodes into the pointer when it is set, as encoding/json does.
func TestAssignUnexportedEmbeddedPointer(t *testing.T) {
	type T struct {
		*asgHiddenPtr `json:"hp"`
		*asgHidden
	}
	a := NewAssigner(reflect.TypeFor[T]())
	tree, _ := Decode([]byte(`{"hp":{"HP":1}}`))
	var v T
	if err := a.Assign(&v, tree); err == nil || !strings.Contains(err.Error(), "cannot set embedded pointer to unexported struct: schema.asgHiddenPtr") {
		t.Errorf("nil pointer: %v", err)
	}
	v = T{asgHiddenPtr: &asgHiddenPtr{}, asgHidden: &asgHidden{}}
	tree, _ = Decode([]byte(`{"hp":{"HP":1},"H":2}`))
	if err := a.Assign(&v, tree); err != nil || v.HP != 1 || v.H != 2 {
		t.Errorf("set pointers: %v, %+v %+v", err, v.asgHiddenPtr, v.asgHidden)
	}
	ref := T{asgHiddenPtr: &asgHiddenPtr{}, asgHidden: &asgHidden{}}
	if err := json.Unmarshal([]byte(`{"hp":{"HP":1},"H":2}`), &ref); err != nil || !reflect.DeepEqual(ref, v) {
		t.Errorf("json.Unmarshal: %v, %+v", err, ref)
	}
}

func TestAssignArguments(t *testing.T) {
	a := NewAssigner(reflect.TypeFor[int]())
	var n int
	var s string
	var nilPtr *int
	for _, tc := range []struct {
		ptr  any
		want string
	}{
		{nil, "json: Unmarshal(nil)"},
		{n, "json: Unmarshal(non-pointer int)"},
		{nilPtr, "json: Unmarshal(nil *int)"},
		{&s, "schema: Assign(*string) on an Assigner for int"},
	} {
		if err := a.Assign(tc.ptr, json.Number("1")); err == nil || err.Error() != tc.want {
			t.Errorf("Assign(%#v) = %v, want %q", tc.ptr, err, tc.want)
		}
	}
	if err := NewAssigner(nil).Assign(&n, nil); err == nil {
		t.Error("Assigner for nil type: no error")
	}
	if err := a.Assign(&n, json.Number("42")); err != nil || n != 42 {
		t.Errorf("Assign(&n) = %v, n = %d", err, n)
	}
}

// TestAssignGoValues: trees not made by Decode (float64, int, ...) go
// through encoding/json.
func TestAssignGoValues(t *testing.T) {
	type T struct {
		F float64        `json:"f"`
		I int            `json:"i"`
		A any            `json:"a"`
		M map[string]int `json:"m"`
	}
	tree := map[string]any{"f": 1.5, "i": 3, "a": []any{int64(2)}, "m": map[string]int{"k": 1}}
	var v T
	if err := NewAssigner(reflect.TypeFor[T]()).Assign(&v, tree); err != nil {
		t.Fatal(err)
	}
	want := T{F: 1.5, I: 3, A: []any{2.0}, M: map[string]int{"k": 1}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %+v, want %+v", v, want)
	}
}

func TestAssignConcurrent(t *testing.T) {
	a := NewAssigner(reflect.TypeFor[asgAll]())
	input := []byte(`{"s":"x","structs":[{"a":1}],"map":{"k":2},"any":[1],"time":"2020-01-01T00:00:00Z","q":"3"}`)
	tree, _ := Decode(input)
	want, _ := unmarshalRef(reflect.TypeFor[asgAll](), input, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				var v asgAll
				if err := a.Assign(&v, tree); err != nil || !reflect.DeepEqual(&v, want) {
					t.Errorf("Assign: %v, %+v", err, v)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestJSONFields(t *testing.T) {
	var names []string
	for _, f := range jsonFields(reflect.TypeFor[asgAll]()) {
		names = append(names, f.name)
	}
	got := strings.Join(names, " ")
	// X and Deep clash; AsgConfA.y and AsgConfB.Y are different names;
	// over comes from the shallower field, W from the tagged one.
	for _, want := range []string{" over ", " e ", " deep ", " pe ", " pei ", " H ", " HP ", " y ", " Y ", " z ", " W ", " Inner ", " Untagged ", " - ", " QF "} {
		if !strings.Contains(" "+got+" ", want) {
			t.Errorf("fields %q lack %q", got, want)
		}
	}
	for _, bad := range []string{" X ", " Deep ", " Skip ", " unexp "} {
		if strings.Contains(" "+got+" ", bad) {
			t.Errorf("fields %q have %q", got, bad)
		}
	}
}

type assignBenchIn struct {
	Path    string   `json:"path"`
	Pattern string   `json:"pattern,omitempty"`
	Limit   int      `json:"limit,omitempty"`
	Exts    []string `json:"exts,omitempty"`
	Deep    *bool    `json:"deep,omitempty"`
}

// BenchmarkAssign compares Assign from a decoded tree with json.Unmarshal
// from the bytes. ns/op is for both together; the metrics split them.
func BenchmarkAssign(b *testing.B) {
	input := []byte(`{"path":"/tmp","pattern":"*.go","limit":10,"exts":["go","md"]}`)
	tree, err := Decode(input)
	if err != nil {
		b.Fatal(err)
	}
	a := NewAssigner(reflect.TypeFor[assignBenchIn]())
	in := new(assignBenchIn) // one target, so only the conversions allocate
	measure := func(f func() error) (ns, allocs float64) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		for range b.N {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&m1)
		return float64(elapsed.Nanoseconds()) / float64(b.N), float64(m1.Mallocs-m0.Mallocs) / float64(b.N)
	}
	b.ReportAllocs()
	b.ResetTimer()
	assignNs, assignAllocs := measure(func() error {
		*in = assignBenchIn{}
		return a.Assign(in, tree)
	})
	unmarshalNs, unmarshalAllocs := measure(func() error {
		*in = assignBenchIn{}
		return json.Unmarshal(input, in)
	})
	b.StopTimer()
	b.ReportMetric(assignNs, "assign-ns/op")
	b.ReportMetric(assignAllocs, "assign-allocs/op")
	b.ReportMetric(unmarshalNs, "unmarshal-ns/op")
	b.ReportMetric(unmarshalAllocs, "unmarshal-allocs/op")
	b.ReportMetric(unmarshalNs/assignNs, "speedup")
}
