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
		`{"threadId":"","runId":"r"}`, `{`, `null`, `[]`, `{"threadId":"t","THREADID":"u","runId":"r","x":[{"y":null}]} `, `{"threadId":"t","runId":"r"} {}`,
		`{"threadId":"t","runId":"r","messages":null,"resume":null,"tools":[{"name":"n","parameters":{}}]}`, `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":7}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := parseRunAgentInput(data)
		// The body is read a value at a time: it must read as
		// encoding/json reads it whole.
		var ref runAgentInput
		refErr := json.Unmarshal(data, &ref)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "agui: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			if refErr == nil && strings.Contains(err.Error(), "not a RunAgentInput") {
				t.Fatalf("refused as %v; encoding/json reads it", err)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("taken; encoding/json refuses it: %v", refErr)
		}
		if ref.ThreadID != in.ThreadID || ref.RunID != in.RunID || ref.ParentRunID != in.ParentRunID || len(ref.Messages) != len(in.Messages) ||
			len(ref.Resume) != len(in.Resume) || len(ref.Tools) != len(in.Tools) || string(ref.State) != string(in.State) {
			t.Fatalf("read as %+v; encoding/json reads %+v", in, ref)
		}
		for i, m := range in.Messages {
			r := ref.Messages[i]
			if m.ID != r.ID || m.Role != r.Role || m.Role == "user" && string(m.Content) != string(r.Content) {
				t.Fatalf("message %d read as %+v; encoding/json reads %+v", i, m, r)
			}
		}
		for i, e := range in.Resume {
			if r := ref.Resume[i]; e.InterruptID != r.InterruptID || e.Status != r.Status || string(e.Payload) != string(r.Payload) {
				t.Fatalf("resume %d read as %+v; encoding/json reads %+v", i, e, r)
			}
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
