package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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

// asgAll has a field of every kind the one pass fills, and some it hands
// to encoding/json. The fuzz target uses it too.
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

// errRefused: the one pass refuses the arguments (bad JSON, numbers out of
// float64 range); Args.Prepare reports why.
var errRefused = errors.New("refused by the pass")

// fill runs the one pass without a schema over input into a new value of
// type typ, then encoding/json where the pass leaves the value to it, as
// Args.Prepare does. It returns the canonical text, and whether the pass
// filled the value alone.
func fill(typ reflect.Type, input []byte) (v any, canon []byte, native bool, err error) {
	p := reflect.New(typ)
	s := pass{decoder: decoder{data: input}}
	if s.top(nil, newPlan(typ), p.Elem()) != nil || s.invalid {
		return nil, nil, false, errRefused
	}
	canon = applyEdits(input, s.edits, 0, len(input))
	if !s.failed {
		return p.Interface(), canon, true, nil
	}
	p.Elem().SetZero()
	err = json.Unmarshal(canon, p.Interface())
	return p.Interface(), canon, false, err
}

// unmarshalRef runs json.Unmarshal into a new value of t.
func unmarshalRef(t reflect.Type, data []byte) (any, error) {
	p := reflect.New(t).Interface()
	err := json.Unmarshal(data, p)
	return p, err
}

// TestFill: the one pass fills what json.Unmarshal of the canonical text
// gives, by itself except where key order matters, and fails where it fails,
// with its words.
func TestFill(t *testing.T) {
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
	tests := []struct {
		name  string
		typ   reflect.Type
		input string
		err   string // substring of the error; "" means success
		// folded: keys match fields only case-insensitively, so
		// encoding/json fills the value (their order matters).
		folded bool
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
		{name: "integers are canonical", typ: allType, input: `{"i":1e2,"i64":2.0,"u":3E0,"n":1.50e+3,"f32":16777217.00000000001,"any":[-0.0]}`},
		{name: "int fraction", typ: allType, input: `{"i64":2.5}`, err: "number 2.5"},
		{name: "int64 overflow", typ: allType, input: `{"i64":9223372036854775808}`, err: "number 9223372036854775808"},
		{name: "float32 overflow", typ: allType, input: `{"f32":3.5e38}`, err: "number 3.5e38 into Go struct field asgAll.f32 of type float32"},
		{name: "float64 overflow", typ: allType, input: `{"f64":1e400}`, err: "refused by the pass"},
		{name: "string into int", typ: reflect.TypeFor[In](), input: `{"path":"/","limit":"ten"}`, err: "json: cannot unmarshal string into Go struct field In.limit of type int"},
		{name: "number into string", typ: allType, input: `{"s":1}`, err: "cannot unmarshal number into Go struct field asgAll.s of type string"},
		{name: "bool into float", typ: allType, input: `{"f64":true}`, err: "cannot unmarshal bool into Go struct field asgAll.f64 of type float64"},
		{name: "object into bool", typ: allType, input: `{"b":{}}`, err: "cannot unmarshal object into Go struct field asgAll.b of type bool"},
		{name: "array into string", typ: allType, input: `{"s":[]}`, err: "cannot unmarshal array into Go struct field asgAll.s of type string"},

		// Pointers.
		{name: "pointers", typ: allType, input: `{"p":5,"pp":"x","ps":{"a":1}}`},
		{name: "pointer type error", typ: allType, input: `{"p":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.p of type int"},

		// Slices, arrays, maps.
		{name: "slices", typ: allType, input: `{"sl":["a","b"],"structs":[{"a":1,"l":[1,-2]},{"b":"x"}],"pstructs":[{"a":3},null]}`},
		{name: "empty slices", typ: allType, input: `{"sl":[],"structs":[],"bytes":""}`},
		{name: "slice element error", typ: allType, input: `{"structs":[{"a":1},{"a":"x"}]}`, err: "cannot unmarshal string into Go struct field asgInner.structs.a of type int"},
		{name: "bytes as numbers", typ: allType, input: `{"bytes":[1,2,255]}`},
		{name: "bytes bad base64", typ: allType, input: `{"bytes":"!!"}`, err: "illegal base64"},
		{name: "string into slice", typ: allType, input: `{"sl":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.sl of type []string"},
		{name: "array extra dropped", typ: allType, input: `{"arr":[1,2,"not checked"]}`},
		{name: "maps", typ: allType, input: `{"map":{"a":1,"b":2},"mapsl":{"x":[1,2],"y":[],"z":null},"namedkeys":{"k":true,"n":null}}`},
		{name: "map element error", typ: allType, input: `{"map":{"a":"x"}}`, err: "cannot unmarshal string into Go struct field asgAll.map of type int"},
		{name: "array into map", typ: allType, input: `{"map":[]}`, err: "cannot unmarshal array into Go struct field asgAll.map of type map[string]int"},

		// Interfaces.
		{name: "any", typ: allType, input: `{"any":{"a":[1,2.5,"x",true,null,{"b":-1e3}]},"anys":[1,[2],{}],"anymap":{"k":1}}`},
		{name: "any float overflow", typ: allType, input: `{"any":[1e999]}`, err: "refused by the pass"},
		{name: "interface with methods", typ: allType, input: `{"iface":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.iface of type fmt.Stringer"},
		{name: "interface with methods, null", typ: allType, input: `{"iface":null}`},
		{name: "top-level any", typ: reflect.TypeFor[any](), input: `{"a":[1,{"b":null}]}`},
		{name: "top-level map", typ: reflect.TypeFor[map[string][]float32](), input: `{"a":[1,2],"b":null}`},
		{name: "top-level slice", typ: reflect.TypeFor[[]*int](), input: `[1,null,3]`},
		{name: "top-level null", typ: reflect.TypeFor[*In](), input: `null`},

		// Struct fields.
		{name: "case-insensitive keys", typ: reflect.TypeFor[In](), input: `{"PATH":"/x","Limit":3,"EXTS":["a"],"dEEp":false,"unknown":1}`, folded: true},
		{name: "case-insensitive unicode", typ: allType, input: `{"ſ":"long s","\u212a":1}`, folded: true},
		{name: "exact name before folded", typ: reflect.TypeFor[In](), input: `{"path":"exact","Path":"folded"}`, folded: true},
		{name: "folded keys merge", typ: allType, input: `{"inner":{"a":1},"INNER":{"b":"x"},"Inner":{"l":[1]}}`, folded: true},
		{name: "embedded", typ: allType, input: `{"e":"emb","over":1,"deep":2,"pe":"p","pei":3,"H":4,"y":5,"Y":6,"z":7,"X":8,"W":9,"Inner":{"e":"in","deep":1}}`},
		{name: "embedded pointer allocated for null", typ: allType, input: `{"pe":null}`},
		{name: "unexported embedded pointer", typ: allType, input: `{"HP":1}`, err: "cannot set embedded pointer to unexported struct"},
		{name: "deep", typ: reflect.TypeFor[any](), input: strings.Repeat(`{"a":[`, 500) + strings.Repeat("]}", 500)},
		{name: "keys and strings with escapes", typ: reflect.TypeFor[map[string]string](), input: `{"a\u00e9":"x\ny","b":"\ud83d\ude00"}`},
		{name: "ignored fields", typ: allType, input: `{"Skip":1,"-":2,"unexp":3,"Untagged":4,"untagged":5}`, folded: true},
		{name: "nested", typ: reflect.TypeFor[Outer](), input: `{"in":{"path":"a","exts":["x"]},"items":[{"path":"b","deep":true},{"limit":2}],"by_key":{"k":{"path":"c"},"l":{}}}`},
		{name: "nested error path", typ: reflect.TypeFor[Outer](), input: `{"by_key":{"k":{"deep":1}}}`, err: "cannot unmarshal number into Go struct field In.by_key.deep of type bool"},
		{name: "embedded error path", typ: allType, input: `{"pei":"x"}`, err: "cannot unmarshal string into Go struct field asgAll.AsgPEmbedded.pei of type int"},
		{name: "unnamed struct error path", typ: allType, input: `{"unnamed":{"V":"x"}}`, err: "Go struct field .unnamed.V of type int"},
		{name: "recursive", typ: allType, input: `{"next":{"next":{"s":"deep","inner":{"a":1}}}}`},
		{name: "struct from array", typ: allType, input: `{"inner":[1]}`, err: "cannot unmarshal array into Go struct field asgAll.inner of type schema.asgInner"},
		{name: "first error wins, rest filled", typ: allType, input: `{"i":"x","s":"ok"}`, err: "asgAll.i of type int"},

		// Raw messages.
		{name: "raw", typ: allType, input: `{"raw":{"a":[1,2.50,"x"],"b":null},"rawp":true,"raws":[1,"2",null]}`},

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
		{name: "string option unquoted", typ: allType, input: `{"q":12}`, err: "invalid use of ,string struct tag"},
		{name: "string option overflow", typ: allType, input: `{"q":"1e2"}`, err: "json: cannot unmarshal number 1e2 into Go struct field asgAll.q of type int"},
		{name: "int keys", typ: allType, input: `{"intkeys":{"1":"a","-2":"b"}}`},
		{name: "int keys bad", typ: allType, input: `{"intkeys":{"x":"a"}}`, err: "cannot unmarshal number x into Go struct field asgAll.intkeys of type int"},
		{name: "complex", typ: allType, input: `{"cx":1}`, err: "cannot unmarshal number into Go struct field asgAll.cx of type complex128"},
		{name: "complex null", typ: allType, input: `{"cx":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, canon, native, err := fill(tc.typ, []byte(tc.input))
			if tc.err == "" {
				want, wantErr := unmarshalRef(tc.typ, canon)
				if err != nil || wantErr != nil {
					t.Fatalf("fill: %v; json.Unmarshal: %v", err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("fill and json.Unmarshal differ:\n got  %+v\n want %+v", got, want)
				}
				if native == tc.folded {
					t.Errorf("filled by the pass alone: %v, want %v", native, !tc.folded)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.err)
			}
			if err == errRefused {
				return // Args.Prepare reports a problem
			}
			if _, wantErr := unmarshalRef(tc.typ, canon); wantErr == nil {
				t.Fatalf("json.Unmarshal succeeds, fill fails with %v", err)
			} else if err.Error() != wantErr.Error() {
				t.Errorf("error %q, json.Unmarshal says %q", err, wantErr)
			}
		})
	}
}

// TestFillOwnsStrings: strings in the filled value do not share memory with
// the caller's bytes, which it may reuse.
func TestFillOwnsStrings(t *testing.T) {
	type T struct {
		S  string            `json:"s"`
		M  map[string]string `json:"m"`
		R  json.RawMessage   `json:"r"`
		N  json.Number       `json:"n"`
		SL []string          `json:"sl"`
	}
	input := []byte(`{"s":"abc","m":{"k":"v"},"r":[1],"n":12,"sl":["x"]}`)
	got, _, native, err := fill(reflect.TypeFor[T](), input)
	if err != nil || !native {
		t.Fatal(err, native)
	}
	for i := range input {
		if input[i] >= 'a' && input[i] <= 'z' || input[i] >= '0' && input[i] <= '9' {
			input[i] = 'Z'
		}
	}
	want := &T{S: "abc", M: map[string]string{"k": "v"}, R: json.RawMessage(`[1]`), N: "12", SL: []string{"x"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the input changed: %+v", got)
	}
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
