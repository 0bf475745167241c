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
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
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

// A run local counts across the batches of one run: the agent loop opens
// a run per task (Session.BeginRun) and every turn's batch shares its
// value; a batch outside a run is a run of its own.
func ExampleNewRunLocal() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "ping"}, func(context.Context, struct{}) (string, error) {
		return "pong", nil
	}))
	calls := toolkit.NewRunLocal[*atomic.Int64]()
	tk.Use(toolkit.Interceptor{Name: "count",
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			inv.Meta("run_calls", calls.LoadOrInit(inv, func() *atomic.Int64 { return new(atomic.Int64) }).Add(1))
			return next(ctx, inv)
		}})

	ping := []toolkit.Call{{ID: "c", Name: "ping", Args: json.RawMessage(`{}`)}}
	sess, _ := tk.Session("s")
	run, end := sess.BeginRun(ctx)
	for range 3 { // three turns of one run
		fmt.Println("run:", sess.Run(run, ping)[0].Meta["run_calls"])
	}
	end()
	fmt.Println("alone:", sess.Run(ctx, ping)[0].Meta["run_calls"])
	// Output:
	// run: 1
	// run: 2
	// run: 3
	// alone: 1
}
