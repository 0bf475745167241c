package mcpbridge

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sizeCase is a result of every kind of content this package sends, made
// of the fuzzer's text, data and JSON.
func sizeCase(text string, data []byte, raw string) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: text},
		&mcp.TextContent{Text: raw}, // a JSON part's text copy
		&mcp.ImageContent{Data: data, MIMEType: "image/png"},
		&mcp.AudioContent{Data: data, MIMEType: "audio/wav"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "toolstream://call/c/part/4", MIMEType: "application/pdf", Blob: data}},
	}}
	if raw != "" {
		out.StructuredContent = json.RawMessage(raw)
	}
	return out
}

// FuzzEncodedSize: the size encodedSize counts, without encoding the large
// fields, is the size json.Marshal writes (the SDK's encoding), byte for
// byte, whatever the text (escapes, HTML characters, invalid UTF-8, U+2028),
// the data and the JSON (whitespace, escapes in strings); and the cheap
// bound is never below it.
func FuzzEncodedSize(f *testing.F) {
	f.Add("plain", []byte("data"), `{"a":1}`)
	f.Add("<b> & \"q\" \\ \b\f\n\r\t \x01 \x7f", []byte{}, `{ "a" : [1, 2 ,3] ,
	"b":"x y <&> \u2028 \" \\ \\\" "}`)
	f.Add("\u2028\u2029 é 漢 \xff\xfe \xe2\x80", []byte{0, 1, 2, 3, 4}, "\"\u2028 \u2029 \\u2028 <\"")
	f.Add("", []byte(nil), ``)
	f.Add(strings.Repeat("x", 1000), make([]byte, 1001), `[`+strings.Repeat(`"<>", `, 50)+`null]`)
	f.Fuzz(func(t *testing.T, text string, data []byte, raw string) {
		if raw != "" && !json.Valid([]byte(raw)) {
			t.Skip() // the engine's JSON parts are valid JSON
		}
		out := sizeCase(text, data, raw)
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodedSize(out, 0) // limit 0: always counted
		if err != nil || got != len(b) {
			t.Fatalf("encodedSize %d, %v; json.Marshal writes %d bytes: %s", got, err, len(b), b)
		}
		if bound, ok := sizeBound(out); !ok || bound < len(b) {
			t.Fatalf("bound %d (%v) under the size %d", bound, ok, len(b))
		}
	})
}

// BenchmarkResultSize measures a 4 MiB JSON result and its text copy (8 MiB
// in all) by encodedSize and by encoding it with json.Marshal, in turns in
// one loop; marshal/count is the ratio.
func BenchmarkResultSize(b *testing.B) {
	raw := `{"rows":[` + strings.Repeat(`{"name":"a <b>","n":12345},`, 4<<20/27) + `null]}`
	out := sizeCase("", nil, raw)
	out.Content = out.Content[1:2]
	var cs, ms []float64
	for b.Loop() {
		t0 := time.Now()
		n, err := encodedSize(out, 0)
		t1 := time.Now()
		m, err2 := json.Marshal(out)
		t2 := time.Now()
		if err != nil || err2 != nil || n != len(m) {
			b.Fatal(n, len(m), err, err2)
		}
		cs = append(cs, float64(t1.Sub(t0).Nanoseconds()))
		ms = append(ms, float64(t2.Sub(t1).Nanoseconds()))
	}
	slices.Sort(cs)
	slices.Sort(ms)
	c, m := cs[len(cs)/2], ms[len(ms)/2]
	b.ReportMetric(c/1e6, "count-ms")
	b.ReportMetric(m/1e6, "marshal-ms")
	b.ReportMetric(m/c, "marshal/count")
}

// TestSmallResultIsNotMeasured: a result well under the limit passes on the
// bound, without an allocation: ordinary calls pay nothing for the limit.
func TestSmallResultIsNotMeasured(t *testing.T) {
	out := sizeCase(strings.Repeat("t", 4096), make([]byte, 4096), `{"rows":[1,2,3]}`)
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := encodedSize(out, defaultMaxResultSize); err != nil || n > defaultMaxResultSize {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations to size a small result", allocs)
	}
}
