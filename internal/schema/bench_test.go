package schema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// benchArgs is a typical small tool: a required string, an optional string,
// an int with a minimum, a list of enum strings and an optional flag.
type benchArgs struct {
	Query string   `json:"query" jsonschema:"what to search for"`
	Lang  string   `json:"lang,omitempty"`
	Limit int      `json:"limit" tool:"minimum=1"`
	Exts  []string `json:"exts,omitempty" tool:"enum=go|md|txt"`
	Exact *bool    `json:"exact,omitempty"`
}

var benchJSON = []byte(`{"query":"context cancellation","lang":"en","limit":10,"exts":["go","md"],"exact":true}`)

type benchSetup struct {
	v     *Validator
	ref   *jsonschema.Resolved
	inst  any // UseNumber, for the compiled validator
	instF any // float64 numbers, as the reference needs
}

func newBenchSetup(b *testing.B) benchSetup {
	b.Helper()
	s, err := For[benchArgs]()
	if err != nil {
		b.Fatal(err)
	}
	v, err := Compile(s)
	if err != nil || !v.Fast() {
		b.Fatalf("Compile: %v, fast=%v", err, v != nil && v.Fast())
	}
	ref, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	inst, err := Decode(benchJSON)
	if err != nil {
		b.Fatal(err)
	}
	var instF any
	if err := json.Unmarshal(benchJSON, &instF); err != nil {
		b.Fatal(err)
	}
	if p := v.Validate(inst); p != nil {
		b.Fatalf("compiled rejects the instance: %v", p)
	}
	if err := ref.Validate(instF); err != nil {
		b.Fatalf("reference rejects the instance: %v", err)
	}
	return benchSetup{v, ref, inst, instF}
}

func BenchmarkValidate(b *testing.B) {
	bs := newBenchSetup(b)
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if bs.v.Validate(bs.inst) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if bs.ref.Validate(bs.instF) != nil {
				b.Fatal("invalid")
			}
		}
	})
	// speedup times both on the same instance, interleaved so that machine
	// noise hits both alike, and reports reference/compiled.
	b.Run("speedup", func(b *testing.B) {
		const batch = 32
		var tc, tr time.Duration
		for b.Loop() {
			t0 := time.Now()
			for range batch {
				bs.v.Validate(bs.inst)
			}
			t1 := time.Now()
			for range batch {
				bs.ref.Validate(bs.instF)
			}
			tr += time.Since(t1)
			tc += t1.Sub(t0)
		}
		b.ReportMetric(float64(tc.Nanoseconds())/float64(b.N*batch), "compiled-ns/op")
		b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N*batch), "reference-ns/op")
		b.ReportMetric(float64(tr)/float64(tc), "x-faster")
	})
	b.Run("decode+compiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inst, err := Decode(benchJSON)
			if err != nil || bs.v.Validate(inst) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("decode+reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var inst any
			if err := json.Unmarshal(benchJSON, &inst); err != nil || bs.ref.Validate(inst) != nil {
				b.Fatal("invalid")
			}
		}
	})
	bad := map[string]any{"query": 3, "limit": json.Number("0"), "exts": []any{"go", "rs"}, "extra": true}
	b.Run("compiled-invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(bs.v.Validate(bad)) != 4 {
				b.Fatal("want 4 problems")
			}
		}
	})
}

// BenchmarkPrepare is the argument path as the engine runs it: one pass
// over the bytes that validates, prepares and, for typed tools, fills the
// input struct; json.Unmarshal (no validation) for scale.
func BenchmarkPrepare(b *testing.B) {
	raw := mustArgs(b, nil)
	typed := mustArgs(b, reflect.TypeFor[benchArgs]())
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, probs, err := raw.Prepare(benchJSON, nil); probs != nil || err != nil {
				b.Fatal(probs, err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, probs, err := typed.Prepare(benchJSON, new(benchArgs)); probs != nil || err != nil {
				b.Fatal(probs, err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := json.Unmarshal(benchJSON, new(benchArgs)); err != nil {
				b.Fatal(err)
			}
		}
	})
	empty := mustArgs(b, reflect.TypeFor[struct{}]())
	in, data := new(struct{}), []byte(`{}`)
	b.Run("empty", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, probs, err := empty.Prepare(data, in); probs != nil || err != nil {
				b.Fatal(probs, err)
			}
		}
	})
	bad := []byte(`{"query":3,"limit":0,"exts":["go","rs"],"extra":true}`)
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, probs, _ := typed.Prepare(bad, new(benchArgs)); len(probs) != 4 {
				b.Fatal(probs)
			}
		}
	})
}
