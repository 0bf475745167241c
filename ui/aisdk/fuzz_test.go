package aisdk

import (
	"strings"
	"testing"
)

// FuzzParseChatRequest: any body is either refused with an error that
// names the package, or parsed into a request with an id whose user
// messages and answers turn into the thread's input without a panic.
func FuzzParseChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","trigger":"submit-message","messageId":"m","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		`{"id":"c","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"tour"}]},{"id":"a1","role":"assistant","parts":[{"type":"step-start"},{"type":"text","text":"ok","state":"done"},{"type":"dynamic-tool","toolName":"write_note","toolCallId":"c4","state":"approval-responded","input":{"text":"hi"},"approval":{"id":"c4","approved":false,"reason":"no"}}]}]}`,
		`{"id":"c","messages":[{"id":"a1","role":"assistant","parts":[{"type":"tool-x","toolCallId":"c","state":"approval-responded","approval":{"id":"c"}}]}]}`,
		`{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"data-x","data":1}]}]}`,
		`{"id":"","messages":[]}`, `{`, `null`, `{"id":"c","trigger":"regenerate-message","messages":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseChatRequest(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "aisdk: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			return
		}
		if req.ID == "" {
			t.Fatal("parsed without an id")
		}
		in := req.input()
		users := 0
		for _, m := range req.Messages {
			if m.Role == "user" {
				users++
			}
		}
		if len(in.Messages) != users {
			t.Fatalf("%d user messages became %d", users, len(in.Messages))
		}
		for _, a := range in.Answers {
			if a.Call == "" {
				t.Fatal("an answer without a call")
			}
		}
	})
}
