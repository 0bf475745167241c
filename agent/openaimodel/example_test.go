package openaimodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/openaimodel"
	"github.com/toolstream/toolstream/toolkit"
)

// A model on the Chat Completions API asks for a tool; its pieces arrive
// as they are generated. The server here stands in for the API (or vLLM,
// Ollama, LM Studio: any base URL) so that the example runs offline.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"count_lines","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"dir\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"cmd\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":52,"completion_tokens":17,"total_tokens":69}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", data)
		}
	}))
	defer srv.Close()

	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-example"), option.WithHTTPClient(srv.Client()))
	model := openaimodel.NewChat(client, "gpt-4.1-mini", openaimodel.WithTemperature(0))

	reply, err := model.Generate(context.Background(), &agent.Request{
		System:   "Be brief.",
		Messages: []agent.Message{agent.UserText("How many lines are in cmd?")},
		Tools: []toolkit.Definition{{Name: "count_lines", Description: "Count the lines of files.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"]}`)}},
		Stream: func(c agent.Chunk) {
			switch c.Kind {
			case agent.ChunkCall:
				fmt.Println("call", c.Index, c.CallID, c.Name)
			case agent.ChunkArgs:
				fmt.Printf("  args %s\n", c.Text)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Finish, reply.Calls[0].ID, string(reply.Calls[0].Args), reply.Usage.InputTokens, reply.Usage.OutputTokens)
	// Output:
	// call 0 call_1 count_lines
	//   args {"dir":
	//   args "cmd"}
	// tool_calls call_1 {"dir":"cmd"} 52 17
}

// A model on the Responses API that keeps nothing on OpenAI's side: with
// store false, reasoning items come back encrypted in the reply's Extra and
// go back with the conversation.
func ExampleNewResponses() {
	client := openai.NewClient() // OPENAI_API_KEY from the environment
	model := openaimodel.NewResponses(client, "gpt-5-mini",
		openaimodel.WithMaxTokens(4096),
		openaimodel.WithRequestOptions(
			option.WithJSONSet("store", false),
			option.WithJSONSet("include", []string{"reasoning.encrypted_content"})))
	_ = model // an agent.Model: give it to the agent loop
}

// Both APIs, and a local server that speaks Chat Completions. Nothing is
// sent here: a model is a client and a model id until the loop asks it.
func ExampleNewChat() {
	client := openai.NewClient() // OPENAI_API_KEY, OPENAI_BASE_URL from the environment

	chat := openaimodel.NewChat(client, "gpt-4.1-mini")         // POST /chat/completions
	responses := openaimodel.NewResponses(client, "gpt-5-mini") // POST /responses

	// Any OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp) speaks Chat Completions:
	local := openaimodel.NewChat(openai.NewClient(
		option.WithBaseURL("http://localhost:11434/v1"), option.WithAPIKey("ollama")), "qwen3")
	fmt.Println(chat.Name(), responses.Name(), local.Name())
	// Output:
	// gpt-4.1-mini gpt-5-mini qwen3
}
