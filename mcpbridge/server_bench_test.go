package mcpbridge_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/toolkit"
)

// BenchmarkServerCallOverhead is one call of a tool that does nothing made
// through MCP in process (the go-sdk client and the Server in one process
// over in-memory transports: JSON-RPC encoding, the SDK's dispatch, the
// toolkit) against the same call made directly with Session.Run. The two are
// timed in turns in one loop, so that machine noise hits both alike;
// mcp/direct is the ratio. It runs under the newest protocol revision
// (server/discover, per-request metadata) and under 2025-11-25 (initialize).
func BenchmarkServerCallOverhead(b *testing.B) {
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		b.Run("version="+v, func(b *testing.B) { srvBenchCallOverhead(b, v) })
	}
}

func srvBenchCallOverhead(b *testing.B, version string) {
	tk := srvToolkit(b)
	cs := srvConnect(b, srvNew(b, tk), nil, version)
	ts, err := tk.Session("bench-direct")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	direct := func() {
		if res := ts.Run(ctx, []toolkit.Call{{ID: "c", Name: "noop", Args: []byte(`{}`)}}); res[0].IsError() {
			b.Fatal(res[0].Text())
		}
	}
	params := &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{}}
	viaMCP := func() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
	direct()
	viaMCP()
	const batch = 50
	var ds, ms []float64
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			direct()
		}
		t1 := time.Now()
		for range batch {
			viaMCP()
		}
		t2 := time.Now()
		ds = append(ds, float64(t1.Sub(t0).Nanoseconds())/batch)
		ms = append(ms, float64(t2.Sub(t1).Nanoseconds())/batch)
	}
	d, m := srvBenchMedian(ds), srvBenchMedian(ms)
	b.ReportMetric(d, "direct-ns/call")
	b.ReportMetric(m, "mcp-ns/call")
	b.ReportMetric(m/d, "mcp/direct")
}

func srvBenchMedian(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}
