package schema

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaGen builds random schemas from the fast-path keywords, with values
// chosen near each other so that instances land on both sides of the edges.
// Byte-level fuzzing rarely builds such nested combinations.
type schemaGen struct{ r *rand.Rand }

var (
	genTypes    = []string{"null", "boolean", "integer", "number", "string", "array", "object"}
	genNumbers  = []any{0, 1, -1, 2, 3, 1.5, 0.5, 0.1, 0.3, 10, -0.5, 1e300, 1e-7}
	genStrings  = []string{"", "a", "ab", "abc", "A1", "日本", "a.b"}
	genPatterns = []string{"^a", "b$", "^[a-z]*$", "\\d", "."}
	genKeys     = []string{"a", "b", "c", "a.b"}
)

func (g schemaGen) pick(n int) int { return g.r.IntN(n) }

func (g schemaGen) value(depth int) any {
	switch k := g.pick(7); {
	case k == 0:
		return nil
	case k == 1:
		return g.pick(2) == 0
	case k == 2:
		return genNumbers[g.pick(len(genNumbers))]
	case k == 3:
		return genStrings[g.pick(len(genStrings))]
	case k == 4 && depth > 0:
		a := make([]any, g.pick(4))
		for i := range a {
			a[i] = g.value(depth - 1)
		}
		return a
	case k == 5 && depth > 0:
		m := map[string]any{}
		for range g.pick(4) {
			m[genKeys[g.pick(len(genKeys))]] = g.value(depth - 1)
		}
		return m
	default:
		return genNumbers[g.pick(4)]
	}
}

func (g schemaGen) schema(depth int) any {
	if g.pick(8) == 0 {
		return g.pick(3) != 0 // true more often than false
	}
	s := map[string]any{}
	sub := func() any {
		if depth == 0 {
			return map[string]any{"type": genTypes[g.pick(len(genTypes))]}
		}
		return g.schema(depth - 1)
	}
	subs := func() []any {
		l := make([]any, g.pick(4))
		for i := range l {
			l[i] = sub()
		}
		return l
	}
	num := func() any { return genNumbers[g.pick(len(genNumbers))] }
	small := func() int { return g.pick(4) }
	for range 1 + g.pick(4) {
		switch g.pick(24) {
		case 0, 1:
			if g.pick(3) == 0 {
				var ts []string
				for range 1 + g.pick(3) {
					ts = append(ts, genTypes[g.pick(len(genTypes))])
				}
				s["type"] = ts
			} else {
				s["type"] = genTypes[g.pick(len(genTypes))]
			}
		case 2:
			e := make([]any, g.pick(4))
			for i := range e {
				e[i] = g.value(1)
			}
			s["enum"] = e
		case 3:
			s["const"] = g.value(1)
			if g.pick(2) == 0 {
				delete(s, "const")
				s["default"] = g.value(1) // refused by Compile when invalid
			}
		case 4:
			s["multipleOf"] = []any{1, 2, 0.5, 0.1, 3, 0.01, 1e-300}[g.pick(7)]
		case 5:
			s["minimum"] = num()
		case 6:
			s["maximum"] = num()
		case 7:
			s["exclusiveMinimum"] = num()
		case 8:
			s["exclusiveMaximum"] = num()
		case 9:
			s["minLength"] = small()
		case 10:
			s["maxLength"] = small()
		case 11:
			s["pattern"] = genPatterns[g.pick(len(genPatterns))]
		case 12:
			s["items"] = sub()
		case 13:
			s["prefixItems"] = subs()
		case 14:
			s["minItems"], s["maxItems"] = small(), small()
		case 15:
			s["uniqueItems"] = g.pick(3) != 0
		case 16:
			p := map[string]any{}
			for range 1 + g.pick(3) {
				p[genKeys[g.pick(len(genKeys))]] = sub()
			}
			s["properties"] = p
		case 17:
			var req []string
			for range g.pick(3) {
				req = append(req, genKeys[g.pick(len(genKeys))])
			}
			s["required"] = req
		case 18:
			if g.pick(2) == 0 {
				s["additionalProperties"] = false
			} else {
				s["additionalProperties"] = sub()
			}
		case 19:
			s["minProperties"], s["maxProperties"] = small(), small()
		case 20:
			s["allOf"] = subs()
		case 21:
			s["anyOf"] = subs()
		case 22:
			s["oneOf"] = subs()
		case 23:
			s["not"] = sub()
		}
	}
	return s
}

// TestRandomSchemasMatchReference is a deterministic differential test:
// random schemas and instances, compiled validator vs jsonschema-go.
func TestRandomSchemasMatchReference(t *testing.T) {
	schemas, instances := 4000, 25
	if testing.Short() {
		schemas = 500
	}
	seed := uint64(1)
	if s := os.Getenv("SCHEMA_RANDOM_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	g := schemaGen{rand.New(rand.NewPCG(seed, 2))}
	var valid, invalid int
	for range schemas {
		schemaJSON, err := json.Marshal(g.schema(3))
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(schemaJSON, &s); err != nil {
			t.Fatalf("unmarshal %s: %v", schemaJSON, err)
		}
		v, err := Compile(&s)
		if err != nil && strings.Contains(err.Error(), "invalid default") {
			continue
		}
		if err != nil {
			t.Fatalf("Compile(%s): %v", schemaJSON, err)
		}
		if !v.Fast() {
			t.Fatalf("%s is not on the fast path", schemaJSON)
		}
		// The one pass prepares as the tree pipeline did, on objects with
		// the generator's keys (nulls, defaults, nesting).
		for range 3 {
			obj := map[string]any{}
			for range g.pick(5) {
				obj[genKeys[g.pick(len(genKeys))]] = g.value(2)
			}
			objJSON, _ := json.Marshal(obj)
			checkPrepareMatchesTree(t, v, schemaJSON, objJSON)
		}
		for range instances {
			instJSON, err := json.Marshal(g.value(3))
			if err != nil {
				t.Fatal(err)
			}
			var instF any
			if err := json.Unmarshal(instJSON, &instF); err != nil {
				t.Fatal(err)
			}
			want := v.resolved.Validate(instF) == nil
			got := v.Validate(mustDecode(t, string(instJSON)))
			if (got == nil) != want {
				t.Fatalf("disagreement\nschema:   %s\ninstance: %s\nreference valid: %v\ncompiled: %v", schemaJSON, instJSON, want, got)
			}
			if want {
				valid++
			} else {
				invalid++
			}
		}
	}
	// Make sure the generator exercises both outcomes.
	t.Logf("%d valid, %d invalid", valid, invalid)
	if valid < schemas || invalid < schemas {
		t.Errorf("unbalanced outcomes: %d valid, %d invalid", valid, invalid)
	}
}
