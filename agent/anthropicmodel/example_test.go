package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
	"github.com/toolstream/toolstream/toolkit"
)

// A streamed turn in which the model asks for a tool. The server here
// stands in for the Messages API so that the example runs offline; in a
// program, anthropic.NewClient() reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"usage":{"input_tokens":42,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"weather","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":17}}`,
			`{"type":"message_stop"}`,
		} {
			var typ struct{ Type string }
			_ = json.Unmarshal([]byte(e), &typ)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, e)
		}
	}))
	defer srv.Close()

	client := anthropic.NewClient(option.WithAPIKey("key"), option.WithBaseURL(srv.URL))
	model := anthropicmodel.New(client, "claude-sonnet-5-5", anthropicmodel.WithMaxTokens(4096))

	reply, err := model.Generate(context.Background(), &agent.Request{
		System:   "You are a weather assistant.",
		Messages: []agent.Message{agent.UserText("Weather in Paris?")},
		Tools: []toolkit.Definition{{
			Name:       "weather",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}},
		Stream: func(c agent.Chunk) {
			switch c.Kind {
			case agent.ChunkText:
				fmt.Printf("text %q\n", c.Text)
			case agent.ChunkCall:
				fmt.Printf("call %d: %s %s\n", c.Index, c.CallID, c.Name)
			case agent.ChunkArgs:
				fmt.Printf("args %d: %q\n", c.Index, c.Text)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Finish, reply.Calls[0].Name, string(reply.Calls[0].Args), reply.Usage.InputTokens, reply.Usage.OutputTokens)
	// Output:
	// text "Checking."
	// call 0: toolu_01 weather
	// args 0: "{\"city\": "
	// args 0: "\"Paris\"}"
	// tool_calls weather {"city": "Paris"} 42 17
}

// A model with its options, asked for one turn directly (the agent loop
// does this for every turn). Compiled, not run: it needs
// ANTHROPIC_API_KEY and the network.
func ExampleNew() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	sess, _ := tk.Session("conversation-1")
	conv := agent.NewConversation("You are brief.", "Weather in Oslo?")
	defs, _ := sess.Definitions(ctx)

	client := anthropic.NewClient() // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL from the environment
	model := anthropicmodel.New(client, "claude-sonnet-4-5",
		anthropicmodel.WithMaxTokens(16000),       // the API requires a bound; 8192 by default
		anthropicmodel.WithParallelToolUse(false), // default: several tool calls per turn
	)
	reply, err := model.Generate(ctx, &agent.Request{
		System:   conv.System,
		Messages: conv.Messages,
		Tools:    defs,
		Stream:   func(c agent.Chunk) { fmt.Print(c.Text) }, // text and argument pieces as they arrive
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Finish, len(reply.Calls), "calls")
}
