package agui

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseRunAgentInput: any body is either refused with an error that
// names the package, or parsed into an input whose ids are set and whose
// messages and answers turn into the thread's input without a panic.
func FuzzParseRunAgentInput(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`,
		`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":{"approved":false,"reason":"no"}}]}`,
		`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":{"approved":true,"args":{"a":1}}}]}`,
		`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"c1","status":"cancelled"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"x","toolCalls":[]},{"id":"b","role":"tool","content":"y","toolCallId":"c"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":null}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":[{"type":"text"}]}]}`,
		`{"threadId":"","runId":"r"}`, `{`, `null`, `[]`, `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":7}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseRunAgentInput(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "agui: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			return
		}
		if in.ThreadID == "" || in.RunID == "" {
			t.Fatal("parsed without ids")
		}
		got := in.input()
		users := 0
		for _, m := range in.Messages {
			if m.Role == "user" {
				users++
				if c := bytes.TrimSpace(m.Content); len(c) == 0 || c[0] != '"' && c[0] != '[' {
					t.Fatalf("user message %q taken with content %q: want a string or an array of parts", m.ID, m.Content)
				}
			}
		}
		if len(got.Messages) != users || len(got.Answers) != len(in.Resume) {
			t.Fatalf("%d user messages and %d resume entries became %d and %d", users, len(in.Resume), len(got.Messages), len(got.Answers))
		}
		for _, a := range got.Answers {
			if len(a.Args) > 0 && !json.Valid(a.Args) {
				t.Fatalf("answer args %q are not JSON", a.Args)
			}
		}
	})
}
