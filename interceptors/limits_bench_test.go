package interceptors_test

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// BenchmarkCallLimitsScopes: a one-call batch under a limit per turn, per
// run (the run found on the batch's context, under a few context values
// as an agent's would be) and per session, side by side.
func BenchmarkCallLimitsScopes(b *testing.B) {
	for _, sc := range []struct {
		name string
		opt  interceptors.LimitOption
	}{
		{"turn", interceptors.PerTurn(1 << 30)},
		{"run", interceptors.PerRun(1 << 30)},
		{"session", interceptors.PerSession(1 << 30)},
	} {
		b.Run(sc.name, func(b *testing.B) {
			tk := icKit(b, nil, interceptors.CallLimits(sc.opt))
			limitTools(b, tk, "search")
			s := testutil.Session(b, tk, "s")
			ctx, end := s.BeginRun(context.Background())
			defer end()
			ctx = toolkit.WithUser(toolkit.WithAgent(ctx, "agent"), "user")
			calls := []toolkit.Call{testutil.Call("c", "search", `{}`)}
			b.ReportAllocs()
			for b.Loop() {
				s.Run(ctx, calls)
			}
		})
	}
}
