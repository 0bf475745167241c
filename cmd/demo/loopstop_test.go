package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// turnsModel plays the given turns, one per call of Next, then answers.
type turnsModel struct {
	turns []Turn
	asked int
}

func (m *turnsModel) Name() string { return "turns" }

func (m *turnsModel) Next(_ context.Context, _ []Message, _ []toolkit.Definition) (Turn, error) {
	m.asked++
	if m.asked <= len(m.turns) {
		return m.turns[m.asked-1], nil
	}
	return Turn{Text: "the model's own answer"}, nil
}

// TestLoopHonoursStop: the agent loop ends after a batch that says so
// (toolkit.Batch.Stop): a return-direct batch's results are the final
// answer, the model is not asked again; a call limit that ends the run
// ends it with its message.
func TestLoopHonoursStop(t *testing.T) {
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	weather := toolkit.MustTool(toolkit.Spec{Name: "weather", ReturnDirect: true, ConcurrencySafe: true}, func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return "Sunny in " + in.City, nil
	})
	search := toolkit.MustTool(toolkit.Spec{Name: "search", ReadOnly: true}, func(context.Context, struct{}) (string, error) { return "found", nil })
	if err := tk.Register([]*toolkit.Tool{weather, search}); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(interceptors.CallLimits(interceptors.PerToolPerSession("search", 1), interceptors.EndRun())); err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) toolkit.Call {
		return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
	}
	for _, tc := range []struct {
		name   string
		turns  []Turn
		answer string
		asked  int
	}{
		{"return direct", []Turn{{Calls: []toolkit.Call{call("1", "weather", `{"city":"Oslo"}`), call("2", "weather", `{"city":"Rome"}`)}}},
			"Sunny in Oslo\n\nSunny in Rome", 1},
		{"not all return direct", []Turn{{Calls: []toolkit.Call{call("1", "weather", `{"city":"Oslo"}`), call("2", "search", `{}`)}}},
			"the model's own answer", 2},
		{"call limit ends the run", []Turn{{Calls: []toolkit.Call{call("1", "search", `{}`)}}, {Calls: []toolkit.Call{call("2", "search", `{}`)}}},
			`the run was stopped: calls of "search" are limited to 1 per session`, 2},
	} {
		sess, err := tk.Session("loop-" + strings.ReplaceAll(tc.name, " ", "-"))
		if err != nil {
			t.Fatal(err)
		}
		m := &turnsModel{turns: tc.turns}
		var out bytes.Buffer
		a := &agent{sess: sess, model: m, view: newTermView(&out, false), maxTurns: 5}
		sum, err := a.run(context.Background(), "what now?")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if sum.Answer != tc.answer || m.asked != tc.asked {
			t.Errorf("%s: answer %q after %d model turns, want %q after %d\n%s", tc.name, sum.Answer, m.asked, tc.answer, tc.asked, out.String())
		}
	}
}
