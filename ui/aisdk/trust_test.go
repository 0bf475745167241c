package aisdk_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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
	for th := a.Host.Lookup("x2"); th == nil || th.Paused() == nil; th = a.Host.Lookup("x2") {
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
