package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// colourOut is the output schema of the external tools below.
const colourOut = `{"type":"object","properties":{"colour":{"type":"string","enum":["red","blue"]}},"required":["colour"]}`

func externalWithOutput(t *testing.T, name string) *toolkit.Tool {
	t.Helper()
	tool, err := toolkit.NewExternalTool(toolkit.Spec{Name: name, OutputSchema: json.RawMessage(colourOut)},
		[]byte(`{"type":"object","properties":{"question":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// TestSubmitRefusesNonConformingOutput: an external tool that declares an
// output schema gets its structured result checked as a handler's is. A
// successful Submit whose result does not conform (a value outside the
// enum; no JSON value at all) is refused with an *OutputError
// (an *OutputError) naming the problem, and the call keeps waiting, so
// that the submitter can send a valid one; nothing of the refused result
// reaches the model or the observers. A valid result then completes the
// call, its deltas adding up to the result.
func TestSubmitRefusesNonConformingOutput(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, externalWithOutput(t, "pick_colour"))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "pick_colour", `{"question":"?"}`)})
	for r := range run.Results() {
		if r.State != events.StateSuspended {
			continue
		}
		err := s.Submit("e", []events.Part{jsonPart(`{"colour":"green"}`)}, nil)
		var oe *toolkit.OutputError
		if !isErr[*toolkit.OutputError](err) || !errors.As(err, &oe) || !strings.Contains(err.Error(), "colour") {
			t.Fatalf("Submit(non-conforming) = %v, want an *OutputError about colour", err)
		}
		err = s.Submit("e", []events.Part{events.Text("blue")}, nil)
		if !isErr[*toolkit.OutputError](err) || !strings.Contains(err.Error(), "no structured result") {
			t.Fatalf("Submit(text only) = %v, want an *OutputError: no structured result", err)
		}
		if got := s.Suspended(); len(got) != 1 || got[0].ID != "e" {
			t.Fatalf("after refused Submits, Suspended() = %v, want the call still waiting", got)
		}
		if err := s.Submit("e", []events.Part{events.Text("here: "), jsonPart(`{"colour":"blue"}`)}, nil); err != nil {
			t.Fatalf("Submit(valid) = %v", err)
		}
		// A failure is not checked: it has no structured result.
	}
	r := run.Wait()[0]
	if r.State != events.StateSuccess || r.Err != nil {
		t.Fatalf("result %s %v %q", r.State, r.Err, r.Text())
	}
	if got := r.Text(); strings.Contains(got, "green") || !strings.Contains(got, "blue") {
		t.Fatalf("result %q", got)
	}
	testutil.CheckDeltasAddUp(t, rec, r)
}

// TestSubmitErrorNotChecked: a failure submitted for an external tool with
// an output schema is the call's failure, unchecked.
func TestSubmitErrorNotChecked(t *testing.T) {
	tk := testutil.Kit(t)
	testutil.Add(t, tk, externalWithOutput(t, "pick_colour"))
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "pick_colour", `{}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			if err := s.Submit("e", nil, errors.New("the user left")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r := run.Wait()[0]; r.State != events.StateError || r.Text() != "Error: the user left" {
		t.Fatalf("%s %q", r.State, r.Text())
	}
}

// TestExternalOutputCheckedAfterFilters: as for a handler's result, the
// engine checks an external call's structured result as the call's stream
// filters let it through: a filter that makes it break the schema fails
// the call with an *OutputError that the interceptors see, and the
// model-visible result is what the deltas add up to.
func TestExternalOutputCheckedAfterFilters(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithObserver(rec))
	testutil.Add(t, tk, externalWithOutput(t, "pick_colour"))
	seen := make(chan toolkit.Outcome, 1)
	if err := tk.Use(toolkit.Interceptor{Name: "redact", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		inv.FilterDeltas(func(p events.Part) events.Part {
			if p.Type == events.PartJSON {
				p.JSON = json.RawMessage(strings.ReplaceAll(string(p.JSON), "blue", "[redacted]"))
			}
			return p
		})
		out := next(ctx, inv)
		seen <- out
		return out
	}}); err != nil {
		t.Fatal(err)
	}
	s := testutil.Session(t, tk, "s")
	run := s.Start(context.Background(), []toolkit.Call{testutil.Call("e", "pick_colour", `{}`)})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			if err := s.Submit("e", []events.Part{jsonPart(`{"colour":"blue"}`)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := run.Wait()[0]
	if out := <-seen; !isErr[*toolkit.OutputError](out.Err) {
		t.Fatalf("the interceptor saw %s %v, want an *OutputError", out.State, out.Err)
	}
	if r.State != events.StateError || !isErr[*toolkit.OutputError](r.Err) || !strings.Contains(r.Text(), "does not match its output schema") {
		t.Fatalf("result %s %v %q", r.State, r.Err, r.Text())
	}
	testutil.CheckDeltasAddUp(t, rec, r)
}

func jsonPart(s string) events.Part {
	return events.Part{Type: events.PartJSON, JSON: json.RawMessage(s)}
}

// TestToolCheckOutput: Tool.CheckOutput is the engine's check, for code that
// hands a result over on its own (package durable).
func TestToolCheckOutput(t *testing.T) {
	tool := externalWithOutput(t, "pick_colour")
	if err := tool.CheckOutput([]events.Part{jsonPart(`{"colour":"red"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := tool.CheckOutput([]events.Part{jsonPart(`{}`)}); !isErr[*toolkit.OutputError](err) {
		t.Fatalf("CheckOutput({}) = %v", err)
	}
	plain := externalTool(t, toolkit.Spec{Name: "ask"})
	if err := plain.CheckOutput([]events.Part{events.Text("anything")}); err != nil {
		t.Fatalf("no schema: %v", err)
	}
}
