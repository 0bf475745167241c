package mcpbridge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzServerArguments sends any JSON as a call's arguments: every call gets
// a result (success or isError with a message), never a protocol error, a
// panic or a hang.
func FuzzServerArguments(f *testing.F) {
	for _, seed := range []string{`{"city":"Oslo"}`, `{}`, `null`, `[]`, `"x"`, `{"city":1,"days":99}`,
		`{"city":"a","days":1.5}`, `{"city":"\u0000","extra":{"deep":[1,2,{"x":null}]}}`, `1e999`} {
		f.Add("weather", seed)
	}
	f.Add("nosuch", `{}`)
	f.Add("noop", `{"a":1}`)
	tk := srvToolkit(f)
	cs := srvConnect(f, srvNew(f, tk), nil, "2025-11-25")
	f.Fuzz(func(t *testing.T, tool, args string) {
		if !json.Valid([]byte(args)) {
			t.Skip()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			// Unknown tools are the SDK's protocol error (the list has no
			// such tool); anything else is ours.
			if tool == "weather" || tool == "noop" {
				t.Fatalf("call %s %s: %v", tool, args, err)
			}
			return
		}
		if res.IsError && len(res.Content) == 0 {
			t.Fatalf("isError without a message for %s %s", tool, args)
		}
	})
}
