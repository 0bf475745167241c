package aisdk

import (
	"encoding/json"
	"fmt"
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
		`{"id":"","messages":[]}`, `{`, `null`, `{"id":"c","ID":"d","body":{"x":[1]},"messages":null} `, `{"id":"c"} []`,
		`{"id":"c","messages":[{"id":"a","role":"assistant","parts":[{"type":"text","text":"long"},{"type":"dynamic-tool","toolCallId":"t","state":"output-available","input":{},"output":[{"type":"json","json":{}}]}]}]}`, `{"id":"c","trigger":"regenerate-message","messages":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := parseChatRequest(data)
		// The body is read a message at a time: it must read as
		// encoding/json reads it whole.
		var ref chatRequest
		refErr := json.Unmarshal(data, &ref)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "aisdk: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			if refErr == nil && strings.Contains(err.Error(), "not a useChat request") {
				t.Fatalf("refused as %v; encoding/json reads it", err)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("taken; encoding/json refuses it: %v", refErr)
		}
		if ref.ID != req.ID || ref.Trigger != req.Trigger || ref.MessageID != req.MessageID || len(ref.Messages) != len(req.Messages) {
			t.Fatalf("read as %+v; encoding/json reads %+v", req, ref)
		}
		for i, m := range req.Messages {
			r := ref.Messages[i]
			if m.ID != r.ID || m.Role != r.Role || len(m.Parts) != len(r.Parts) {
				t.Fatalf("message %d read as %+v; encoding/json reads %+v", i, m, r)
			}
			for j, p := range m.Parts {
				q := r.Parts[j]
				if m.Role != "user" {
					q.Text = p.Text // dropped: not read
				}
				if p.Type != q.Type || p.Text != q.Text || p.ToolCallID != q.ToolCallID || p.State != q.State || (p.Approval == nil) != (q.Approval == nil) ||
					p.Approval != nil && (p.Approval.ID != q.Approval.ID || p.Approval.Reason != q.Approval.Reason || (p.Approval.Approved == nil) != (q.Approval.Approved == nil)) {
					t.Fatalf("message %d part %d read as %+v; encoding/json reads %+v", i, j, p, q)
				}
			}
		}
		if got, want := req.input(), ref.input(); len(got.Messages) != len(want.Messages) || fmt.Sprint(got.Answers) != fmt.Sprint(want.Answers) {
			t.Fatalf("input %+v; from encoding/json's reading %+v", got, want)
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
