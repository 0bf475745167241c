package aisdk_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/aisdk"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// TestCrossSiteAnswerRefused (issue 27, item 4): a page on another site
// can make the browser POST a body it wrote with a "simple" content type
// (text/plain, a form) and no preflight: such a request, carrying an
// approval-responded part for a call the chat waits for, must be refused
// with nothing decided; so must anything from an origin that is not the
// server's own. The page's own origin, with JSON, still answers.
func TestCrossSiteAnswerRefused(t *testing.T) {
	a, url := serve(t)
	first := post(t, url, chunk{"id": "x1", "messages": []any{userMsg("u1", "note")}}).all()
	if tools(first)["n1_1"].state != "approval-requested" {
		t.Fatalf("the chat does not wait for n1_1:\n%s", dump(first))
	}
	assistant := chunk{"id": first[0]["messageId"], "role": "assistant", "parts": []any{
		chunk{"type": "dynamic-tool", "toolName": "write_note", "toolCallId": "n1_1", "state": "approval-responded",
			"approval": chunk{"id": "n1_1", "approved": true}},
	}}
	body, _ := json.Marshal(chunk{"id": "x1", "messages": []any{userMsg("u1", "note"), assistant}})
	for _, c := range uitest.CrossSiteCases() {
		t.Run(c.Name, func(t *testing.T) {
			status, msg := uitest.Send(t, http.MethodPost, url+"/api/chat", c, body)
			if status != c.Status {
				t.Fatalf("status %d (%.300s), want %d", status, msg, c.Status)
			}
			for _, s := range c.Says {
				if !strings.Contains(msg, s) {
					t.Errorf("the refusal %q does not say %q", msg, s)
				}
			}
			a.StillWaits(t, "x1", "n1_1")
		})
	}

	status, msg := uitest.Send(t, http.MethodPost, url+"/api/chat", uitest.Request{ContentType: "application/json", Origin: url, Site: "same-origin"}, body)
	if status != http.StatusOK || !strings.Contains(msg, `saved: a`) {
		t.Fatalf("the same-origin answer: %d\n%s", status, msg)
	}
}

// TestCrossSiteResumeRefused: the resume route is a GET, which a page on
// another site can make a browser send without Origin (an <img>, a no-cors
// fetch); it must not read the chat's undelivered response, which would
// then count as delivered and never reach the chat's own page.
func TestCrossSiteResumeRefused(t *testing.T) {
	a, url := serve(t)
	live := post(t, url, chunk{"id": "x2", "messages": []any{userMsg("u1", "tour")}})
	live.next()
	live.resp.Body.Close() // the tab went: the response stays undelivered
	deadline := time.Now().Add(10 * time.Second)
	for th := a.Threads.Lookup("x2"); th == nil || th.Paused() == nil; th = a.Threads.Lookup("x2") {
		if time.Now().After(deadline) {
			t.Fatal("the run did not pause")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range []uitest.Request{
		{Name: "no-cors from another site", Site: "cross-site"},
		{Name: "from another site with its Origin", Origin: "http://evil.example", Site: "cross-site"},
		{Name: "another port of the same host", Origin: "http://127.0.0.1:9", Site: "same-site"},
	} {
		status, msg := uitest.Send(t, http.MethodGet, url+"/api/chat/x2/stream", c, nil)
		if status != http.StatusForbidden {
			t.Errorf("%s: status %d (%.300s), want 403", c.Name, status, msg)
		}
	}
	status, msg := uitest.Send(t, http.MethodGet, url+"/api/chat/x2/stream", uitest.Request{Site: "same-origin"}, nil)
	if status != http.StatusOK || !strings.Contains(msg, `"tool-approval-request"`) {
		t.Fatalf("the chat's own resume: %d\n%.500s", status, msg)
	}
}

// TestAuthorize: the host's hook decides who runs a chat, who reads it
// back (the resume route) and who answers its approvals, before anything
// happens.
func TestAuthorize(t *testing.T) {
	p := &uitest.Policy{Owners: map[string]string{"a1": "alice"}, Approvers: []string{"carol"}}
	a := uitest.New(t, ui.WithAuthorize(p.Authorize))
	h := aisdk.NewHandler(a.Host)
	mux := http.NewServeMux()
	mux.Handle("/api/chat", h)
	mux.Handle("/api/chat/{id}/stream", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	as := func(user, method, path string, body any) (int, string) {
		t.Helper()
		return uitest.SendAs(t, user, method, srv.URL+path, body)
	}
	start := chunk{"id": "a1", "messages": []any{userMsg("u1", "note")}}
	if code, msg := as("bob", "POST", "/api/chat", start); code != http.StatusForbidden || a.Threads.Lookup("a1") != nil {
		t.Fatalf("bob: %d %s", code, msg)
	}
	code, msg := as("alice", "POST", "/api/chat", start)
	if code != http.StatusOK || !strings.Contains(msg, `"tool-approval-request"`) {
		t.Fatalf("alice: %d %s", code, msg)
	}
	var first chunk
	_ = json.Unmarshal([]byte(strings.TrimPrefix(strings.SplitN(msg, "\n", 2)[0], "data: ")), &first)
	answer := chunk{"id": "a1", "messages": []any{userMsg("u1", "note"), chunk{"id": first["messageId"], "role": "assistant", "parts": []any{
		chunk{"type": "dynamic-tool", "toolName": "write_note", "toolCallId": "n1_1", "state": "approval-responded", "approval": chunk{"id": "n1_1", "approved": true}},
	}}}}
	if code, msg := as("bob", "POST", "/api/chat", answer); code != http.StatusForbidden || !strings.Contains(msg, `answering the approval of call \"n1_1\"`) {
		t.Fatalf("bob answers: %d %s", code, msg)
	}
	a.StillWaits(t, "a1", "n1_1")
	p.Asked()
	if code, msg := as("carol", "POST", "/api/chat", answer); code != http.StatusOK || !strings.Contains(msg, "saved: a") {
		t.Fatalf("carol answers: %d %s", code, msg)
	}
	if got := p.Asked(); len(got) != 1 || got[0].Access.Action != ui.ActionAnswer || got[0].Access.Approval == nil || got[0].Access.Approval.Tool != "write_note" {
		t.Fatalf("the hook was asked %+v", got)
	}

	// The resume route reads: asked whether the chat exists or not.
	for _, c := range []struct {
		user, chat string
		status     int
	}{{"", "a1", http.StatusUnauthorized}, {"bob", "a1", http.StatusForbidden}, {"carol", "a1", http.StatusForbidden}, {"bob", "nosuch", http.StatusForbidden}} {
		if code, msg := as(c.user, "GET", "/api/chat/"+c.chat+"/stream", nil); code != c.status {
			t.Errorf("%q resumes %s: %d %s, want %d", c.user, c.chat, code, msg, c.status)
		}
	}
	if got := p.Asked(); len(got) != 4 || got[3].Access != (ui.Access{Thread: "nosuch", Action: ui.ActionRead}) {
		t.Errorf("the hook was asked %+v", got)
	}
	if code, msg := as("alice", "GET", "/api/chat/a1/stream", nil); code != http.StatusNoContent {
		t.Errorf("alice resumes: %d %s", code, msg)
	}
}
