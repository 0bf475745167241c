package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

type readIn struct {
	Path  string `json:"path"`
	Lines int    `json:"lines,omitempty" tool:"default=10,maximum=100"`
}

func readTool(t *testing.T) *toolkit.Tool {
	return testutil.Tool(t, toolkit.Spec{Name: "read_file", ReadOnly: true}, func(_ context.Context, in readIn) (string, error) {
		return "read " + in.Path + " lines " + itoa(in.Lines), nil
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// aliases points calls of old names at the registered tools that replaced
// them, the way a program keeps a renamed tool working for a model that
// still uses the old name.
func aliases(tk *toolkit.Toolkit, old map[string]string, seen *trace) toolkit.Interceptor {
	return toolkit.Interceptor{Name: "alias", Unknown: true, Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		seen.add("alias:" + inv.Call.Name + ":" + boolWord(inv.Unknown()))
		if inv.Unknown() {
			if t, ok := tk.Tool(old[inv.Call.Name]); ok {
				inv.Tool = t
			}
		}
		return next(ctx, inv)
	}}
}

func boolWord(b bool) string {
	if b {
		return "unknown"
	}
	return "known"
}

// TestUnknownToolDefaultUnchanged: with interceptors that did not ask to see
// unknown calls, an unknown tool gets today's answer (closest names, the
// list) and no interceptor runs.
func TestUnknownToolDefaultUnchanged(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, readTool(t))
	var tr trace
	if err := tk.Use(tracing("outer", &tr)); err != nil {
		t.Fatal(err)
	}
	res := testutil.Run(t, tk, "s", testutil.Call("c1", "read_fil", `{"path":"a"}`))[0]
	var ue *toolkit.UnknownToolError
	if res.State != events.StateError || !errors.As(res.Err, &ue) || !isErr[*toolkit.UnknownToolError](res.Err) {
		t.Fatalf("state %s, err %v", res.State, res.Err)
	}
	want := `Error: unknown tool "read_fil"; did you mean "read_file"? Available tools: read_file`
	if res.Text() != want {
		t.Fatalf("text %q, want %q", res.Text(), want)
	}
	if got := tr.get(); len(got) != 0 {
		t.Fatalf("interceptors ran for an unknown tool: %v", got)
	}
}

// TestUnknownToolAlias: an interceptor with Unknown set points a call of a
// renamed tool at its new tool; the arguments are prepared and validated
// against that tool, and the other interceptors wrap it as for any call.
func TestUnknownToolAlias(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, readTool(t))
	var tr trace
	inner := toolkit.Interceptor{Name: "inner", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		tr.add("inner:" + inv.Tool.Name() + ":" + boolWord(inv.Unknown()) + ":" + string(inv.Call.Args))
		return next(ctx, inv)
	}}
	if err := tk.Use(inner, aliases(tk, map[string]string{"readFile": "read_file"}, &tr)); err != nil {
		t.Fatal(err)
	}
	rec := &testutil.Recorder{}
	tk.Observe(rec)
	rs := testutil.Run(t, tk, "s",
		testutil.Call("ok", "readFile", `{"path":"a.txt"}`),
		testutil.Call("bad", "readFile", `{"path":"a.txt","lines":500}`),
		testutil.Call("none", "nothing_like_it", `{}`),
	)
	if rs[0].State != events.StateSuccess || rs[0].Text() != "read a.txt lines 10" || rs[0].Call.Name != "readFile" {
		t.Fatalf("aliased call: %s %q (%s)", rs[0].State, rs[0].Text(), rs[0].Call.Name)
	}
	if !isErr[*toolkit.ArgumentError](rs[1].Err) || !strings.Contains(rs[1].Text(), "lines: must be <= 100") {
		t.Fatalf("aliased call with bad arguments: %s %q", rs[1].State, rs[1].Text())
	}
	if !isErr[*toolkit.UnknownToolError](rs[2].Err) || !strings.Contains(rs[2].Text(), "Available tools: read_file") {
		t.Fatalf("unaliased unknown call: %s %q", rs[2].State, rs[2].Text())
	}
	// The three calls run in parallel (unknown calls touch nothing).
	want := []string{
		"alias:nothing_like_it:unknown",
		"alias:readFile:unknown",
		"alias:readFile:unknown",
		`inner:read_file:known:{"path":"a.txt","lines":10}`,
	}
	got := tr.get()
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("interceptors saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range rs {
		testutil.CheckDeltasAddUp(t, rec, r)
	}
}

// TestUnknownToolEmulated: an interceptor answers calls of a tool nobody
// registered (an emulator); the answer is an ordinary result, deltas and
// all.
func TestUnknownToolEmulated(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	emulate := toolkit.Interceptor{Name: "emulator", Unknown: true, Tools: []string{"weather"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			if !inv.Unknown() || inv.Tool.Spec().Name != "weather" {
				return next(ctx, inv)
			}
			var in struct{ City string }
			_ = json.Unmarshal(inv.Call.Args, &in)
			return toolkit.Success(events.Text("emulated: sunny in " + in.City))
		}}
	if err := tk.Use(emulate); err != nil {
		t.Fatal(err)
	}
	rs := testutil.Run(t, tk, "s", testutil.Call("w", "weather", `{"City":"Oslo"}`), testutil.Call("x", "other", `{}`))
	if rs[0].State != events.StateSuccess || rs[0].Text() != "emulated: sunny in Oslo" {
		t.Fatalf("emulated call: %s %q", rs[0].State, rs[0].Text())
	}
	if !isErr[*toolkit.UnknownToolError](rs[1].Err) {
		t.Fatalf("a name the emulator is not scoped to: %s %v", rs[1].State, rs[1].Err)
	}
	if got := testutil.Types(rec.Of("w")); got[0] != events.TypeStart || got[len(got)-1] != events.TypeResult {
		t.Fatalf("events of the emulated call: %v", got)
	}
	testutil.CheckDeltasAddUp(t, rec, rs[0])
	rec.Check(t)
}

// TestInterceptorCannotSwapAKnownTool: only unknown calls can be pointed at
// another tool; swapping the tool of a known call fails the call, loudly.
func TestInterceptorCannotSwapAKnownTool(t *testing.T) {
	tk := testutil.Kit(t)
	other := testutil.Tool(t, toolkit.Spec{Name: "other"}, func(context.Context, struct{}) (string, error) { return "other ran", nil })
	testutil.Add(t, tk, readTool(t), other)
	_ = tk.Use(toolkit.Interceptor{Name: "swap", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.Tool = other
		return next(ctx, inv)
	}})
	res := testutil.Run(t, tk, "s", testutil.Call("c", "read_file", `{"path":"a"}`))[0]
	if res.State != events.StateError || !strings.Contains(res.Text(), "only a call to an unknown tool can be pointed at another") {
		t.Fatalf("%s %q", res.State, res.Text())
	}
}

// TestToolResolver: a resolver supplies tools for names nobody registered,
// when the call's turn comes; their arguments are validated against their
// own schema, interceptors wrap them, an error is what the model reads,
// and nil leaves the call unknown.
func TestToolResolver(t *testing.T) {
	var firstDone atomic.Bool
	var sawFirstDone atomic.Bool
	dyn := testutil.Tool(t, toolkit.Spec{Name: "dyn_echo"}, func(_ context.Context, in struct {
		Say string `json:"say"`
	}) (string, error) {
		return "echo " + in.Say, nil
	})
	resolver := func(ctx context.Context, s *toolkit.Session, c toolkit.Call) (*toolkit.Tool, error) {
		sawFirstDone.Store(firstDone.Load())
		switch {
		case c.Name == "dyn_echo", c.Name == "echo_v1":
			return dyn, nil
		case strings.HasPrefix(c.Name, "broken"):
			return nil, errors.New("the registry of remote tools is down")
		case c.Name == "boom":
			panic("resolver bug")
		}
		return nil, nil
	}
	tk := testutil.Kit(t, toolkit.WithToolResolver(resolver))
	first := testutil.Tool(t, toolkit.Spec{Name: "first"}, func(context.Context, struct{}) (string, error) {
		time.Sleep(5 * time.Millisecond)
		firstDone.Store(true)
		return "first", nil
	})
	testutil.Add(t, tk, first)
	var tr trace
	_ = tk.Use(tracing("wrap", &tr))
	rs := testutil.Run(t, tk, "s",
		testutil.Call("1", "first", `{}`),
		testutil.Call("2", "dyn_echo", `{"say":"hi"}`),
		testutil.Call("3", "echo_v1", `{"say":7}`),
		testutil.Call("4", "broken_tool", `{}`),
		testutil.Call("5", "nobody", `{}`),
		testutil.Call("6", "boom", `{}`),
	)
	if rs[1].State != events.StateSuccess || rs[1].Text() != "echo hi" {
		t.Fatalf("resolved call: %s %q", rs[1].State, rs[1].Text())
	}
	if !sawFirstDone.Load() {
		t.Fatal("the resolver was asked before the calls before it had run")
	}
	if !isErr[*toolkit.ArgumentError](rs[2].Err) || !strings.Contains(rs[2].Text(), "say: must be a string") {
		t.Fatalf("resolved call with bad arguments: %s %q", rs[2].State, rs[2].Text())
	}
	if !errors.Is(rs[3].Err, toolkit.ErrUnavailable) || !strings.Contains(rs[3].Text(), `tool "broken_tool" could not be resolved: the registry of remote tools is down`) {
		t.Fatalf("resolver error: %s %q", rs[3].State, rs[3].Text())
	}
	if !isErr[*toolkit.UnknownToolError](rs[4].Err) {
		t.Fatalf("unresolved: %s %v", rs[4].State, rs[4].Err)
	}
	if !errors.Is(rs[5].Err, toolkit.ErrUnavailable) || !strings.Contains(rs[5].Text(), "panicked: resolver bug") {
		t.Fatalf("panicking resolver: %s %q", rs[5].State, rs[5].Text())
	}
	// "wrap" saw first, dyn_echo (2) and echo_v1 (3, refused by its schema
	// before the chain), nothing else.
	if got := tr.get(); len(got) != 4 {
		t.Fatalf("the interceptor saw %v", got)
	}
}
