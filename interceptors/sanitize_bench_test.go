package interceptors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// sanBenchText is log-like text of about n bytes: one line in 50 holds an
// API key, an e-mail address and a phone number.
func sanBenchText(n int) string {
	var b strings.Builder
	b.Grow(n + 200)
	for i := 1; b.Len() < n; i++ {
		if i%50 == 0 {
			fmt.Fprintf(&b, "line %d: key sk-proj-%032d mail user%d@example.com call +1 415 555 %04d\n", i, i, i, i%10000)
		} else {
			fmt.Fprintf(&b, "line %d: the quick brown fox jumps over the lazy dog, status=ok took=%dms id=%08x\n", i, i%997, uint32(i)*2654435761)
		}
	}
	return b.String()
}

// sanBenchJSON is a JSON array of about n bytes of records built from the
// same lines.
func sanBenchJSON(n int) []byte {
	var b []byte
	b = append(b, '[')
	for i := 1; len(b) < n; i++ {
		if i > 1 {
			b = append(b, ',')
		}
		msg := fmt.Sprintf("the quick brown fox jumps over the lazy dog, took=%dms", i%997)
		if i%50 == 0 {
			msg = fmt.Sprintf("key sk-proj-%032d mail user%d@example.com call +1 415 555 %04d", i, i, i%10000)
		}
		b = fmt.Appendf(b, `{"id":%d,"status":"ok","msg":%q,"tags":["a","b"],"score":%d.5}`, i, msg, i%100)
	}
	return append(b, ']')
}

// BenchmarkSanitizeRedact runs a result of 1 MiB and 100 MiB (not with
// -short) through Sanitize with the three built-in redactions, in a real
// toolkit: the tool returns the whole result in one part. MiB/s is input
// bytes per second; B/in-byte is bytes allocated per input byte (the engine
// keeps its own copy of the result: about 1 of them).
func BenchmarkSanitizeRedact(b *testing.B) {
	for _, kind := range []string{"text", "json"} {
		for _, size := range []int{1 << 20, 100 << 20} {
			b.Run(fmt.Sprintf("%s/%dMiB", kind, size>>20), func(b *testing.B) {
				if size > 1<<20 && testing.Short() {
					b.Skip("100 MiB: not with -short")
				}
				var part events.Part
				if kind == "text" {
					part = events.Text(sanBenchText(size))
				} else {
					part = events.Part{Type: events.PartJSON, JSON: json.RawMessage(sanBenchJSON(size))}
				}
				in := len(part.Text) + len(part.JSON)
				tk := icKit(b, []toolkit.Option{toolkit.WithDefaultTimeout(time.Hour)}, interceptors.Sanitize(interceptors.RedactAPIKeys(), interceptors.RedactEmails(),
					interceptors.RedactPhoneNumbers(), interceptors.SanitizeMaxBytes(0)))
				tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "big"}, json.RawMessage(`{"type":"object"}`),
					func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
						return []events.Part{part}, nil
					})
				if err != nil {
					b.Fatal(err)
				}
				testutil.Add(b, tk, tool)
				s := testutil.Session(b, tk, "s")
				call := testutil.Call("c", "big", `{}`)
				check := func(r toolkit.Result) {
					if r.State != events.StateSuccess {
						b.Fatalf("%s: %v", r.State, r.Err)
					}
					if text := r.Text(); strings.Contains(text, "sk-proj-") || !strings.Contains(text, "[redacted API key]") {
						b.Fatal("not redacted")
					}
				}
				check(icRun(b, s, call))
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.SetBytes(int64(in))
				b.ResetTimer()
				for b.Loop() {
					icRun(b, s, call)
				}
				b.StopTimer()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(in)*float64(b.N)/(1<<20)/b.Elapsed().Seconds(), "MiB/s")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(in), "B/in-byte")
			})
		}
	}
}
