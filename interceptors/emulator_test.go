package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// emuModel is a scripted Model.
type emuModel struct {
	mu      sync.Mutex
	prompts []string
	reply   string
	err     error
}

func (m *emuModel) Generate(ctx context.Context, prompt string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompts = append(m.prompts, prompt)
	return m.reply, m.err
}

func (m *emuModel) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.prompts...)
}

var _ interceptors.Model = (*emuModel)(nil)

func emuFixture(t *testing.T, ics ...toolkit.Interceptor) (*toolkit.Toolkit, *icCounter, *icCounter) {
	tk := icKit(t, nil, ics...)
	var weather, clock icCounter
	testutil.Add(t, tk,
		toolkit.MustTool(toolkit.Spec{Name: "weather", Description: "Current weather for a city."},
			func(ctx context.Context, in struct {
				City string `json:"city"`
			}) (string, error) {
				weather.inc()
				return "real weather", nil
			}),
		icTool(t, toolkit.Spec{Name: "clock", Description: "The time."}, func(ctx context.Context) (string, error) {
			clock.inc()
			return "real time", nil
		}),
	)
	return tk, &weather, &clock
}

func TestEmulateAnswersWithoutTheTool(t *testing.T) {
	m := &emuModel{reply: `{"temp": 21, "sky": "clear"}`}
	var inner icCounter
	innerIC := toolkit.Interceptor{Name: "inner", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inner.inc()
		return next(ctx, inv)
	}}
	tk, weather, clock := emuFixture(t, interceptors.Emulate(m), innerIC)
	s := testutil.Session(t, tk, "s")

	r := icRun(t, s, testutil.Call("c1", "weather", `{"city":"Paris"}`))
	if r.State != events.StateSuccess || r.Text() != m.reply || r.Meta[interceptors.MetaEmulated] != true {
		t.Fatalf("got %s %q meta %v", r.State, r.Text(), r.Meta)
	}
	icRun(t, s, testutil.Call("c2", "clock", `{}`))
	if weather.get() != 0 || clock.get() != 0 || inner.get() != 0 {
		t.Fatalf("real tools ran %d+%d times, inner interceptor %d; want none", weather.get(), clock.get(), inner.get())
	}
	p := m.seen()[0]
	for _, want := range []string{"Tool: weather", "Description: Current weather for a city.", `Arguments: {"city":"Paris"}`, `"city"`} {
		if !strings.Contains(p, want) {
			t.Fatalf("prompt lacks %q:\n%s", want, p)
		}
	}
}

func TestEmulateChosenTools(t *testing.T) {
	m := &emuModel{reply: "sunny"}
	em := interceptors.Emulate(m)
	em.Tools = []string{"weather"}
	tk, weather, clock := emuFixture(t, em)
	s := testutil.Session(t, tk, "s")
	if r := icRun(t, s, testutil.Call("c1", "weather", `{"city":"Oslo"}`)); r.Text() != "sunny" {
		t.Fatalf("weather: %q", r.Text())
	}
	if r := icRun(t, s, testutil.Call("c2", "clock", `{}`)); r.Text() != "real time" || r.Meta[interceptors.MetaEmulated] != nil {
		t.Fatalf("clock: %q %v", r.Text(), r.Meta)
	}
	if weather.get() != 0 || clock.get() != 1 || len(m.seen()) != 1 {
		t.Fatalf("weather ran %d, clock %d, model asked %d times", weather.get(), clock.get(), len(m.seen()))
	}
}

func TestEmulateModelFailure(t *testing.T) {
	errModel := errors.New("model overloaded")
	t.Run("falls back to the tool", func(t *testing.T) {
		tk, weather, _ := emuFixture(t, interceptors.Emulate(&emuModel{err: errModel}))
		r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "weather", `{"city":"Rome"}`))
		if r.Text() != "real weather" || weather.get() != 1 || r.Meta[interceptors.MetaEmulated] != nil {
			t.Fatalf("got %q, tool ran %d times, meta %v", r.Text(), weather.get(), r.Meta)
		}
	})
	t.Run("no fallback", func(t *testing.T) {
		tk, weather, _ := emuFixture(t, interceptors.Emulate(&emuModel{err: errModel}, interceptors.EmulateNoFallback()))
		r := icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "weather", `{"city":"Rome"}`))
		if r.State != events.StateError || !errors.Is(r.Err, errModel) || weather.get() != 0 {
			t.Fatalf("got %s %v, tool ran %d times", r.State, r.Err, weather.get())
		}
		if !strings.Contains(r.Text(), `emulating tool "weather" failed: model overloaded`) {
			t.Fatalf("model reads %q", r.Text())
		}
	})
}

func TestEmulatePrompt(t *testing.T) {
	m := &emuModel{reply: "12:00"}
	tk, _, _ := emuFixture(t, interceptors.Emulate(m, interceptors.EmulatePrompt(func(inv *toolkit.Invocation) string {
		return "pretend to be " + inv.Call.Name + " for session " + inv.Session
	})))
	icRun(t, testutil.Session(t, tk, "s1"), testutil.Call("c1", "clock", `{}`))
	if got := m.seen(); len(got) != 1 || got[0] != "pretend to be clock for session s1" {
		t.Fatalf("prompts %q", got)
	}
}

// TestEmulateUnknown: with Unknown set, a tool nobody registered is
// emulated too; without it, such a call gets the unknown-tool answer and
// the model is not asked.
func TestEmulateUnknown(t *testing.T) {
	for _, on := range []bool{false, true} {
		m := &emuModel{reply: "a forecast"}
		em := interceptors.Emulate(m)
		em.Unknown = on
		tk, _, _ := emuFixture(t, em)
		s := testutil.Session(t, tk, "s")
		r := icRun(t, s, testutil.Call("c1", "forecast", `{"days":3}`))
		if !on {
			if !isErr[*toolkit.UnknownToolError](r.Err) || len(m.seen()) != 0 {
				t.Fatalf("without Unknown: %s %q, model asked %d times", r.State, r.Text(), len(m.seen()))
			}
			continue
		}
		if r.State != events.StateSuccess || r.Text() != "a forecast" || r.Meta[interceptors.MetaEmulated] != true {
			t.Fatalf("emulated unknown tool: %s %q %v", r.State, r.Text(), r.Meta)
		}
		if p := m.seen(); len(p) != 1 || !strings.Contains(p[0], "Tool: forecast\n") || !strings.Contains(p[0], `Arguments: {"days":3}`) {
			t.Fatalf("prompt %q", p)
		}
	}
}
