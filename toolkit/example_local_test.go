package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/toolstream/toolstream/toolkit"
)

// An interceptor keeps a count per session in a session local: the Local,
// made once with the interceptor, is the key; each session has its own
// value, kept across its batches and dropped by Session.Close.
func ExampleNewSessionLocal() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "ping"}, func(context.Context, struct{}) (string, error) {
		return "pong", nil
	}))
	calls := toolkit.NewSessionLocal[*atomic.Int64]()
	tk.Use(toolkit.Interceptor{Name: "count",
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			n := calls.LoadOrInit(inv, func() *atomic.Int64 { return new(atomic.Int64) }).Add(1)
			inv.Meta("session_calls", n)
			return next(ctx, inv)
		}})

	ping := []toolkit.Call{{ID: "c", Name: "ping", Args: json.RawMessage(`{}`)}}
	a, _ := tk.Session("a")
	b, _ := tk.Session("b")
	for _, s := range []*toolkit.Session{a, a, b, a} {
		r := s.Run(ctx, ping)[0]
		fmt.Println(s.ID(), r.Meta["session_calls"])
	}
	// Output:
	// a 1
	// a 2
	// b 1
	// a 3
}
