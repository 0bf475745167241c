package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolstream/toolstream/toolkit"
)

// A tool whose result goes straight to the user ends the agent loop: the
// batch reports it with Stop.
func ExampleBatch_Stop() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	weather := toolkit.MustTool(toolkit.Spec{Name: "weather", ReturnDirect: true}, func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return "Sunny in " + in.City, nil
	})
	_ = tk.Add(weather)
	sess, _ := tk.Session("s")
	batch := sess.Start(context.Background(), []toolkit.Call{{ID: "1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}})
	results := batch.Wait()
	if stop, ok := batch.Stop(); ok && stop.Reason == toolkit.StopReturnDirect {
		fmt.Println("answer:", results[0].Text()) // no more model turns
	}
	// Output: answer: Sunny in Oslo
}

// A resolver supplies tools for names nobody registered, when the call
// comes: here, an old name of a renamed tool.
func ExampleWithToolResolver() {
	search := toolkit.MustTool(toolkit.Spec{Name: "search_docs"}, func(_ context.Context, in struct {
		Query string `json:"query"`
	}) (string, error) {
		return "3 pages about " + in.Query, nil
	})
	renamed := map[string]*toolkit.Tool{"search": search}
	tk := toolkit.New(toolkit.WithToolResolver(func(_ context.Context, _ *toolkit.Session, c toolkit.Call) (*toolkit.Tool, error) {
		return renamed[c.Name], nil // nil: still unknown
	}))
	defer tk.Close(context.Background())
	_ = tk.Add(search)
	sess, _ := tk.Session("s")
	rs := sess.Run(context.Background(), []toolkit.Call{
		{ID: "1", Name: "search", Args: json.RawMessage(`{"query":"NATS"}`)},
		{ID: "2", Name: "serch_docs", Args: json.RawMessage(`{}`)},
	})
	fmt.Println(rs[0].Text())
	fmt.Println(rs[1].Text())
	// Output:
	// 3 pages about NATS
	// Error: unknown tool "serch_docs"; did you mean "search_docs"? Available tools: search_docs
}
