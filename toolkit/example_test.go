package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// A typed tool: the input schema comes from the struct, the output is
// marshalled for the model.
func ExampleNewTool() {
	type weatherIn struct {
		City  string `json:"city" jsonschema:"city name, e.g. Paris"`
		Units string `json:"units,omitempty" tool:"enum=metric|imperial,default=metric"`
	}
	weather, err := toolkit.NewTool(toolkit.Spec{
		Name:            "get_weather",
		Description:     "Current weather for a city.",
		ReadOnly:        true,
		ConcurrencySafe: true,
	}, func(ctx context.Context, in weatherIn) (string, error) {
		return fmt.Sprintf("%s: 21 degrees (%s)", in.City, in.Units), nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(weather.Definition().Parameters))
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"city name, e.g. Paris"},"units":{"type":"string","default":"metric","enum":["metric","imperial"]}},"required":["city"],"additionalProperties":false}
}

// Running a batch: results come as each call finishes and, all together, in
// call order. Errors are results too.
func ExampleSession_Start() {
	tk := toolkit.New()
	defer tk.Close(context.Background())

	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "add", Description: "Add two integers.", ConcurrencySafe: true},
		func(ctx context.Context, in addIn) (int, error) { return in.A + in.B, nil }))

	sess, _ := tk.Session("conversation-1")
	run := sess.Start(context.Background(), []toolkit.Call{
		{ID: "c1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)},
		{ID: "c2", Name: "add", Args: json.RawMessage(`{"a":"one","b":2}`)},
		{ID: "c3", Name: "ad", Args: json.RawMessage(`{}`)},
	})
	for _, r := range run.Wait() {
		fmt.Printf("%s %s: %s\n", r.Call.ID, r.State, r.Text())
	}
	// Output:
	// c1 success: 3
	// c2 error: Error: invalid arguments for tool "add":
	// - a: must be an integer, got string "one"
	// c3 error: Error: unknown tool "ad"; did you mean "add"? Available tools: add
}

// A tool that streams: progress goes to observers only, deltas add up to the
// model-visible result.
func ExampleObserver() {
	var progress []string
	tk := toolkit.New(toolkit.WithObserver(toolkit.Callbacks{
		OnProgress: func(c toolkit.CallInfo, p events.Progress) { progress = append(progress, p.Message) },
	}))
	defer tk.Close(context.Background())

	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "count"}, func(ctx context.Context, in struct{}) (string, error) {
		em := stream.From(ctx)
		for i := 1; i <= 3; i++ {
			em.Step(fmt.Sprintf("step %d", i), i, 3)
			fmt.Fprintf(em, "%d ", i)
		}
		return "done", nil
	}))
	sess, _ := tk.Session("s")
	r := sess.Run(context.Background(), []toolkit.Call{{ID: "1", Name: "count"}})[0]
	fmt.Printf("model sees: %q\n", r.Text())
	fmt.Printf("people saw: %s\n", strings.Join(progress, ", "))
	// Output:
	// model sees: "1 2 3 done"
	// people saw: step 1, step 2, step 3
}

// An external tool runs outside the process; its result is submitted later.
func ExampleSession_Submit() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	confirm, _ := toolkit.NewExternalTool(toolkit.Spec{Name: "confirm", Description: "Ask the user to confirm."},
		json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`))
	tk.Add(confirm)

	sess, _ := tk.Session("s")
	run := sess.Start(context.Background(), []toolkit.Call{{ID: "q1", Name: "confirm", Args: json.RawMessage(`{"question":"Delete 3 files?"}`)}})
	for r := range run.Results() {
		if r.State == events.StateSuspended {
			// Show the question to the user, then submit the answer.
			sess.Submit(r.Call.ID, []events.Part{events.Text("yes")}, nil)
		}
	}
	fmt.Println(run.Wait()[0].Text())
	// Output:
	// yes
}

// A caller that knows a call must not run (here, arguments a reply cut
// short) gives it its outcome as the batch starts: the call keeps its
// events and its place in the results, and nothing runs it.
func ExampleWithResult() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	type writeIn struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write", Description: "Write a file."},
		func(ctx context.Context, in writeIn) (string, error) { return "wrote " + in.Path, nil }))

	sess, _ := tk.Session("conversation-1")
	calls := []toolkit.Call{
		{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"a.txt","text":"hi"}`)},
		{ID: "c2", Name: "write", Args: json.RawMessage(`{"path":"b.txt","te`)},
	}
	cut := errors.New("your reply was cut before this call's arguments ended; write it again, shorter")
	for _, r := range sess.Run(context.Background(), calls, toolkit.WithResult(1, toolkit.Failure(events.StateError, cut))) {
		fmt.Printf("%s %s: %s\n", r.Call.ID, r.State, r.Text())
	}
	// Output:
	// c1 success: wrote a.txt
	// c2 error: Error: your reply was cut before this call's arguments ended; write it again, shorter
}
