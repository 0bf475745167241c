package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// crossSite is a request as a page on another origin can make a browser
// send it (or as something without a browser sends a body not declared
// as JSON), and the refusal it must get.
type crossSite struct {
	name, ctype, origin, site string
	status                    int
	says                      string
}

func crossSiteCases(method string) []crossSite {
	const evil = "http://evil.example"
	all := []crossSite{
		{"text/plain from another site", "text/plain;charset=UTF-8", evil, "cross-site", 403, evil},
		{"a form from another site", "application/x-www-form-urlencoded", evil, "cross-site", 403, evil},
		{"a multipart form from another site", "multipart/form-data; boundary=x", evil, "cross-site", 403, evil},
		{"JSON from another site without Sec-Fetch-Site", "application/json", evil, "", 403, evil},
		{"another port of this host", "text/plain", "http://127.0.0.1:9", "same-site", 403, "http://127.0.0.1:9"},
		{"cross-site without an Origin", "text/plain", "", "cross-site", 403, "cross-site"},
		{"text/plain without browser headers", "text/plain", "", "", 415, "application/json"},
		{"a form without browser headers", "application/x-www-form-urlencoded", "", "", 415, "application/json"},
		{"no content type", "", "", "", 415, "application/json"},
	}
	if method == http.MethodGet {
		return []crossSite{
			{"no-cors from another site", "", "", "cross-site", 403, "cross-site"},
			{"from another site with its Origin", "", evil, "cross-site", 403, evil},
			{"another port of this host", "", "http://127.0.0.1:9", "same-site", 403, "http://127.0.0.1:9"},
		}
	}
	return all
}

// send sends body to url as c says and returns the status and the answer
// (up to the first line that contains until, if given: a run that goes on
// for a minute is left there).
func send(t *testing.T, method, url string, c crossSite, body string, until ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	for k, v := range map[string]string{"Content-Type": c.ctype, "Origin": c.origin, "Sec-Fetch-Site": c.site, "Accept": "application/json, text/event-stream"} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(until) == 0 || resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var read strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		read.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), until[0]) {
			return resp.StatusCode, read.String()
		}
	}
	t.Fatalf("%s %s: the answer ended without %q:\n%s", method, url, until[0], read.String())
	return 0, ""
}

// TestDemoRefusesCrossSite (issue 27, item 4): every route of the demo's
// page that changes something (the page's approvals, AG-UI, the AI SDK's
// chat and its resume, MCP) refuses what a page on another origin can make
// a browser send, and a body not declared as JSON; nothing is approved.
// The page's own requests still work.
func TestDemoRefusesCrossSite(t *testing.T) {
	d := startDemo(t, "--dir", "../..", "--approve", "page", "--speed", "0", "--once=false", "--session", "trust")
	base := d.URL()
	waitForAsk(t, d)

	// An AG-UI thread and a chat that wait for an approval each.
	interrupt := aguiAsk(t, base+"/agui", "trust")
	startID, askedID := chatAsk(t, base+"/api/chat", "trust")

	routes := []struct{ method, path, body, until string }{
		{"POST", "/api/approve", `{"session":"trust","call":"call_6","approve":true}`, ""},
		{"POST", "/agui", `{"threadId":"trust","runId":"r2","messages":[{"id":"u1","role":"user","content":"` + overview + `"}],"resume":[{"interruptId":"` + interrupt + `","status":"resolved","payload":{"approved":true}}]}`, `"TOOL_CALL_RESULT"`},
		{"POST", "/api/chat", `{"id":"trust","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"` + overview + `"}]},` +
			`{"id":"` + startID + `","role":"assistant","parts":[{"type":"dynamic-tool","toolName":"write_note","toolCallId":"` + askedID + `","state":"approval-responded","approval":{"id":"` + askedID + `","approved":true}}]}]}`, `"tool-output-available"`},
		{"GET", "/api/chat/trust/stream", "", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"evil","version":"1"}}}`, ""},
	}
	for _, r := range routes {
		for _, c := range crossSiteCases(r.method) {
			status, msg := send(t, r.method, base+r.path, c, r.body)
			if status != c.status || !strings.Contains(msg, c.says) {
				t.Errorf("%s %s, %s: %d %.300q, want %d saying %q", r.method, r.path, c.name, status, msg, c.status, c.says)
			}
		}
	}
	if out := d.stdout.String(); strings.Contains(out, "approved call_6") {
		t.Fatalf("a cross-site request approved call_6:\n%s", out)
	}

	// The page's own requests (same origin, JSON) still answer each.
	own := crossSite{ctype: "application/json", origin: base, site: "same-origin"}
	for _, r := range routes[:3] {
		var until []string
		if r.until != "" {
			until = append(until, r.until)
		}
		if status, msg := send(t, r.method, base+r.path, own, r.body, until...); status != http.StatusOK {
			t.Errorf("the page's own %s %s: %d %.300q", r.method, r.path, status, msg)
		}
	}
	if out := d.stdout.String(); !strings.Contains(out, "approved call_6") {
		t.Errorf("the page's approval did not reach call_6:\n%s", out)
	}
}

// overview is what the tests ask the demo's agent, which makes it ask for
// an approval.
const overview = "Give me an overview of this folder."

// waitForAsk waits until the demo's tour asks the page for an approval.
func waitForAsk(t *testing.T, d *demoRun) {
	t.Helper()
	waitForPage(t, d.URL()+"/api/info", d.Failed)
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(d.stdout.String(), "waiting for an answer on the web page"); time.Sleep(20 * time.Millisecond) {
		if msg := d.Failed(); msg != "" {
			t.Fatal(msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tour never asked the page:\n%s", d.stdout.String())
		}
	}
}

// aguiAsk starts an AG-UI run of the thread at url and returns the
// interrupt it ends with, an approval to give.
func aguiAsk(t *testing.T, url, thread string) string {
	t.Helper()
	run := frames(t, url, `{"threadId":"`+thread+`","runId":"r1","messages":[{"id":"u1","role":"user","content":"`+overview+`"}]}`)
	var last struct {
		Outcome struct{ Interrupts []struct{ ID string } }
	}
	if json.Unmarshal([]byte(run[len(run)-1]), &last) != nil || len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("%s: the AG-UI run ends with %s", url, run[len(run)-1])
	}
	return last.Outcome.Interrupts[0].ID
}

// chatAsk starts the AI SDK chat at url and returns its message's id and
// the call whose approval it asks for.
func chatAsk(t *testing.T, url, chat string) (msgID, call string) {
	t.Helper()
	got := frames(t, url, `{"id":"`+chat+`","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"`+overview+`"}]}]}`)
	var start struct{ MessageID string }
	_ = json.Unmarshal([]byte(got[0]), &start)
	var asked struct{ ToolCallID string }
	for _, f := range got {
		if strings.Contains(f, `"tool-approval-request"`) {
			_ = json.Unmarshal([]byte(f), &asked)
		}
	}
	if asked.ToolCallID == "" {
		t.Fatalf("%s: the chat asks for no approval:\n%s", url, strings.Join(got, "\n"))
	}
	return start.MessageID, asked.ToolCallID
}
