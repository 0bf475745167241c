package stream_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// A tool streams its result to the model and its progress to the people
// watching. Outside a tool call the emitter is nil and does nothing, so the
// handler can be called directly (in a unit test, say).
func Example() {
	grep := func(ctx context.Context, in struct{}) (string, error) {
		em := stream.From(ctx)
		for i, file := range []string{"a.go", "b.go"} {
			em.Step("searching "+file, i+1, 2)     // for people only
			fmt.Fprintf(em, "%s:1: match\n", file) // part of the result
		}
		return "2 matches", nil
	}
	tk := toolkit.New(toolkit.WithInlineObserver(toolkit.Callbacks{
		OnProgress: func(c toolkit.CallInfo, p events.Progress) { fmt.Println("progress:", p.Message) },
	}))
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "grep"}, grep))

	sess, _ := tk.Session("s")
	r := sess.Run(context.Background(), []toolkit.Call{{ID: "c1", Name: "grep"}})[0]
	fmt.Printf("model sees: %q\n", r.Text())

	out, _ := grep(context.Background(), struct{}{}) // no call: From(ctx) is nil
	fmt.Printf("called directly: %q\n", out)
	// Output:
	// progress: searching a.go
	// progress: searching b.go
	// model sees: "a.go:1: match\nb.go:1: match\n2 matches"
	// called directly: "2 matches"
}

// printSink is a Sink of its own: what an engine other than the toolkit
// gives its emitters.
type printSink struct{}

func (printSink) Progress(message string, fraction float64, data json.RawMessage) {
	fmt.Printf("progress %q %.2f\n", message, fraction)
}
func (printSink) Delta(p events.Part) error     { fmt.Printf("delta %q\n", p.Text); return nil }
func (printSink) SetMeta(key string, value any) { fmt.Printf("meta %s=%v\n", key, value) }

// An emitter over a sink of one's own. Write keeps whole characters in each
// delta: the first byte of "é" waits for the rest; Flush sends what a last
// write left cut.
func ExampleNewEmitter() {
	em := stream.NewEmitter(printSink{}, true)
	ctx := stream.NewContext(context.Background(), em)

	stream.From(ctx).Progress("copying", 0.5)
	em.Write([]byte("caf\xc3"))
	em.Write([]byte("\xa9 au lait"))
	em.SetMeta("lines", 1)
	em.Write([]byte("\xe2\x82")) // the start of "€", never completed
	em.Flush()
	// Output:
	// progress "copying" 0.50
	// delta "caf"
	// delta "é au lait"
	// meta lines=1
	// delta "\xe2\x82"
}
