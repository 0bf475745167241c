package schema

import (
	"encoding/json"
	"math/big"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

type outText [3]byte

func (outText) MarshalText() ([]byte, error) { return []byte("t"), nil }

type outJSON struct{ hidden int }

func (o outJSON) MarshalJSON() ([]byte, error) { return json.Marshal([]int{o.hidden}) }

type outInner struct {
	N     int             `json:"n" tool:"minimum=-1000000,maximum=1000000"`
	Kind  string          `json:"kind,omitempty" tool:"enum=a|b"`
	Extra map[string]bool `json:"extra"`
}

type outQuoted struct {
	B bool `json:"b,string"`
}

type outAll struct {
	S     string              `json:"s"`
	F     float64             `json:"f"`
	U     uint8               `json:"u"`
	B     bool                `json:"b"`
	Bytes []byte              `json:"bytes"`
	Slice []outInner          `json:"slice"`
	Arr   [2]int              `json:"arr"`
	Map   map[string]outInner `json:"map"`
	Ptr   *outInner           `json:"ptr"`
	Any   any                 `json:"any"`
	When  time.Time           `json:"when"`
	Big   *big.Int            `json:"big"`
	Addr  netip.Addr          `json:"addr"`
	Text  outText             `json:"text"`
	JSON  outJSON             `json:"json"`
	Opt   string              `json:"opt,omitempty"`
	Q     int                 `json:"q,string"`
	QP    *float64            `json:"qp,omitempty,string"`
	QS    []outQuoted         `json:"qs"`
	outInner
}

// FuzzOutputConforms: whatever value of the output type encoding/json
// writes (here: any value json.Unmarshal can put in it) conforms to the
// schema ForOutput infers, so a typed tool's honest output is never refused.
func FuzzOutputConforms(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"s":"x","bytes":"YWJj","slice":[{"n":1,"extra":{"a":true}},{}],"map":{"k":{}, "z":null},"ptr":{"n":2},"any":[1,{"a":null}],"big":12345678901234567890,"addr":"10.0.0.1","n":3,"kind":"a"}`))
	f.Add([]byte(`{"q":"12","qp":"1.5","qs":[{"b":"true"},{}]}`))
	f.Add([]byte(`{"slice":null,"map":null,"ptr":null,"extra":null,"when":"2026-01-02T03:04:05Z"}`))
	s, ok, err := ForOutput(reflect.TypeFor[outAll]())
	if err != nil || !ok {
		f.Fatalf("ForOutput: %v %v", ok, err)
	}
	v, err := Compile(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var x outAll
		if json.Unmarshal(data, &x) != nil {
			return
		}
		if x.N < -1000000 || x.N > 1000000 || (x.Kind != "" && x.Kind != "a" && x.Kind != "b") {
			return // the tags' constraints: such a value must be refused
		}
		out, err := json.Marshal(x)
		if err != nil {
			return
		}
		inst, err := Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		if probs := v.Validate(inst); len(probs) > 0 {
			t.Fatalf("%s\ndoes not conform: %v", out, probs)
		}
	})
}

func TestForOutputKinds(t *testing.T) {
	for _, c := range []struct {
		typ reflect.Type
		ok  bool
	}{
		{reflect.TypeFor[outAll](), true},
		{reflect.TypeFor[*outAll](), true},
		{reflect.TypeFor[map[string]int](), true},
		{reflect.TypeFor[string](), false},
		{reflect.TypeFor[[]outInner](), false},
		{reflect.TypeFor[struct{}](), false},
		{reflect.TypeFor[outJSON](), false},
		{reflect.TypeFor[json.RawMessage](), false},
		{reflect.TypeFor[any](), false},
		{reflect.TypeFor[time.Time](), false},
	} {
		if _, ok, err := ForOutput(c.typ); ok != c.ok || err != nil {
			t.Errorf("%v: ok %v, err %v; want ok %v", c.typ, ok, err, c.ok)
		}
	}
}
