package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// An outer interceptor that clears Invocation.Tool makes the call fail
// with the engine's answer; Evict inside it must not dereference the
// missing tool (the others key by toolName, which falls back to the
// called name).
func TestBuiltinsWhenAnOuterInterceptorClearedTheTool(t *testing.T) {
	for name, ic := range map[string]toolkit.Interceptor{
		"evict":   interceptors.Evict(evictDir(t.TempDir())),
		"retry":   interceptors.Retry(interceptors.RetryIf(nil), interceptors.RetrySleep(func(context.Context, time.Duration) error { return nil })),
		"emulate": interceptors.Emulate(&emuModel{err: errors.New("no model today")}),
	} {
		clear := toolkit.Interceptor{Name: "clear", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			inv.Tool = nil
			return next(ctx, inv)
		}}
		tk := icKit(t, nil, clear, ic)
		testutil.Add(t, tk, icTool(t, toolkit.Spec{Name: "small"}, func(ctx context.Context) (string, error) { return "ok", nil }))
		res := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "small", `{}`))
		if isErr[*toolkit.PanicError](res.Err) || !strings.Contains(res.Text(), "changed the tool") {
			t.Errorf("%s: %s: %q, want the engine's answer about a changed tool", name, res.State, res.Text())
		}
	}
}
