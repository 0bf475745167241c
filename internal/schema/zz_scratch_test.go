package schema

import (
	"reflect"
	"testing"
)

type scanIn struct {
	Path    string   `json:"path" jsonschema:"folder to scan"`
	Pattern string   `json:"pattern,omitempty"`
	Limit   int      `json:"limit,omitempty" tool:"minimum=1"`
	Exts    []string `json:"exts,omitempty" tool:"enum=go|md|txt"`
	Deep    *bool    `json:"deep,omitempty"`
}

func BenchmarkScratchScan(b *testing.B) {
	data := []byte(`{"path":"/tmp","pattern":"*.go","limit":10,"exts":["go","md"]}`)
	a := mustArgs(b, reflect.TypeFor[scanIn]())
	b.ReportAllocs()
	for b.Loop() {
		var in scanIn
		if _, p, err := a.Prepare(data, &in); p != nil || err != nil {
			b.Fatal(p, err)
		}
	}
}
