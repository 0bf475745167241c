package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolstream/toolstream/toolkit"
)

// An interceptor with Unknown set answers calls of a tool under its old
// name: it points them at the tool that has the new one.
func ExampleInterceptor_alias() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "read_file"}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "read " + in.Path, nil
	}))
	renamed := map[string]string{"readFile": "read_file"}
	tk.Use(toolkit.Interceptor{Name: "aliases", Unknown: true,
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			if t, ok := tk.Tool(renamed[inv.Call.Name]); ok && inv.Unknown() {
				inv.Tool = t
			}
			return next(ctx, inv)
		}})

	sess, _ := tk.Session("s")
	for _, r := range sess.Run(ctx, []toolkit.Call{
		{ID: "c1", Name: "readFile", Args: json.RawMessage(`{"path":"go.mod"}`)},
		{ID: "c2", Name: "writeFile", Args: json.RawMessage(`{"path":"go.mod"}`)},
	}) {
		fmt.Println(r.Call.ID, r.State, r.Text())
	}
	// Output:
	// c1 success read go.mod
	// c2 error Error: unknown tool "writeFile". Available tools: read_file
}
