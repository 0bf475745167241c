package interceptors_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// BenchmarkPermissionsPresets: what the dangerous-file presets add to an
// allowed call, end to end through a toolkit. Two toolkits run the same
// call in turns (rounds of 200 calls each): "plain" has a permission
// interceptor with the mode alone, "presets" adds DangerousFiles. ns/op
// is a pair of calls; presets/plain is the median ratio of the rounds.
func BenchmarkPermissionsPresets(b *testing.B) {
	args := json.RawMessage(`{"path":"notes/2026/a.md","text":"some prose about the folder","n":3}`)
	session := func(opts ...interceptors.PermissionOption) *toolkit.Session {
		perm := interceptors.NewPermissions(opts...)
		tk := icKit(b, nil, perm.Interceptor())
		testutil.Add(b, tk, toolkit.MustTool(toolkit.Spec{Name: "write"}, func(context.Context, struct {
			Path string `json:"path"`
			Text string `json:"text"`
			N    int    `json:"n"`
		}) (string, error) {
			return "ok", nil
		}))
		return testutil.Session(b, tk, "s")
	}
	plain := session(interceptors.WithMode(interceptors.AllowAll))
	presets := session(interceptors.WithMode(interceptors.AllowAll), interceptors.WithRules(interceptors.DangerousFiles()...))
	calls := []toolkit.Call{{ID: "c", Name: "write", Args: args}}
	round := func(s *toolkit.Session, n int) time.Duration {
		start := time.Now()
		for range n {
			if r := s.Run(context.Background(), calls)[0]; r.State != events.StateSuccess {
				b.Fatal(r.State, r.Text())
			}
		}
		return time.Since(start)
	}
	var ratios []float64
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(200, b.N-done)
		var p, q time.Duration
		if len(ratios)%2 == 0 { // each side first in turn
			p, q = round(plain, n), round(presets, n)
		} else {
			q, p = round(presets, n), round(plain, n)
		}
		ratios = append(ratios, float64(q)/float64(p))
		done += n
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "presets/plain")
}
