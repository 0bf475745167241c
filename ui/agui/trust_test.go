package agui_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// TestCrossSiteAnswerRefused (issue 27, item 4): a page on another site
// can make the browser POST a body it wrote with a "simple" content type
// (text/plain, a form) and no preflight: such a request, carrying a
// resume entry that approves a call the thread waits for, must be refused
// with nothing decided; so must anything from an origin that is not the
// server's own. The page's own origin, with JSON, still answers.
func TestCrossSiteAnswerRefused(t *testing.T) {
	a, url := serve(t)
	first := run(t, url, input("x1", "r1", user("u1", "note")))
	if ints := first[len(first)-1]["outcome"].(map[string]any)["interrupts"].([]any); len(ints) != 1 || ints[0].(map[string]any)["id"] != "n1_1" {
		t.Fatalf("the run does not wait for n1_1:\n%s", dump(first))
	}
	resume := input("x1", "r2", user("u1", "note"))
	resume["resume"] = []any{map[string]any{"interruptId": "n1_1", "status": "resolved", "payload": map[string]any{"approved": true}}}
	body, _ := json.Marshal(resume)
	for _, c := range uitest.CrossSiteCases() {
		t.Run(c.Name, func(t *testing.T) {
			status, msg := uitest.Send(t, http.MethodPost, url, c, body)
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

	// The server's own page (Sec-Fetch-Site: same-origin, JSON) answers.
	status, msg := uitest.Send(t, http.MethodPost, url, uitest.Request{ContentType: "application/json", Origin: url, Site: "same-origin"}, body)
	if status != http.StatusOK || !strings.Contains(msg, `saved: a`) {
		t.Fatalf("the same-origin answer: %d\n%s", status, msg)
	}
}

// TestAuthorize: the host's hook decides who runs a thread and who answers
// its approvals, before anything happens: a refused request starts no
// thread, takes no message, decides no call and ends no paused run.
func TestAuthorize(t *testing.T) {
	p := &uitest.Policy{Owners: map[string]string{"a1": "alice"}, Approvers: []string{"carol"}}
	a := uitest.New(t, ui.WithAuthorize(p.Authorize))
	srv := httptest.NewServer(agui.NewHandler(a.Host))
	t.Cleanup(srv.Close)
	as := func(user string, in map[string]any) (int, string) {
		t.Helper()
		return uitest.SendAs(t, user, http.MethodPost, srv.URL, in)
	}
	answer := func(runID, call string, approve bool, msgs ...map[string]any) map[string]any {
		in := input("a1", runID, append([]map[string]any{user("u1", "note")}, msgs...)...)
		in["resume"] = []any{map[string]any{"interruptId": call, "status": "resolved", "payload": map[string]any{"approved": approve}}}
		return in
	}

	// Nobody, then bob: refused before the thread exists.
	if code, msg := as("", input("a1", "r1", user("u1", "note"))); code != http.StatusUnauthorized || !strings.Contains(msg, "Bearer") {
		t.Fatalf("no user: %d %s", code, msg)
	}
	if code, msg := as("bob", input("a1", "r1", user("u1", "note"))); code != http.StatusForbidden || !strings.Contains(msg, `running thread \"a1\" is not allowed: bob is neither`) {
		t.Fatalf("bob: %d %s", code, msg)
	}
	if a.Threads.Lookup("a1") != nil {
		t.Fatal("a refused request started the thread")
	}
	if got := p.Asked(); len(got) != 2 || got[0].Access != (ui.Access{Thread: "a1", Action: ui.ActionRun}) || got[0].Allowed || got[1].User != "bob" {
		t.Fatalf("the hook was asked %+v", got)
	}

	// Alice runs her thread; it waits for n1_1.
	if code, msg := as("alice", input("a1", "r1", user("u1", "note"))); code != http.StatusOK || !strings.Contains(msg, `"interrupt"`) {
		t.Fatalf("alice: %d %s", code, msg)
	}
	p.Asked()

	// Bob may not answer it; carol, an approver, may: asked about the
	// answer alone (nothing new to run), with the approval it answers.
	if code, msg := as("bob", answer("r2", "n1_1", true)); code != http.StatusForbidden || !strings.Contains(msg, `answering the approval of call \"n1_1\"`) {
		t.Fatalf("bob answers: %d %s", code, msg)
	}
	a.StillWaits(t, "a1", "n1_1")
	p.Asked()
	if code, msg := as("carol", answer("r2", "n1_1", true)); code != http.StatusOK || !strings.Contains(msg, "saved: a") {
		t.Fatalf("carol answers: %d %s", code, msg)
	}
	got := p.Asked()
	if len(got) != 1 || got[0].Access.Action != ui.ActionAnswer || got[0].Access.Call != "n1_1" || !got[0].Access.Approve ||
		got[0].Access.Approval == nil || got[0].Access.Approval.Tool != "write_note" || string(got[0].Access.Approval.Args) != `{"text":"a"}` {
		t.Fatalf("the hook was asked %+v", got)
	}

	// Now n2_1 waits. Carol may not move the thread on with a message of
	// her own: refused, the paused run goes on waiting.
	if code, msg := as("carol", answer("r3", "n2_1", false, user("u2", "hi"))); code != http.StatusForbidden || !strings.Contains(msg, "running thread") {
		t.Fatalf("carol runs: %d %s", code, msg)
	}
	a.StillWaits(t, "a1", "n2_1")
	if a.Threads.Lookup("a1").Seen("u2") {
		t.Fatal("a refused request's message was taken in")
	}
	// A request that brings nothing new reads the thread: bob may not.
	p.Asked()
	if code, msg := as("bob", input("a1", "r4", user("u1", "note"))); code != http.StatusForbidden || !strings.Contains(msg, `reading thread \"a1\"`) {
		t.Fatalf("bob reads: %d %s", code, msg)
	}
	if got := p.Asked(); len(got) != 1 || got[0].Access.Action != ui.ActionRead {
		t.Fatalf("the hook was asked %+v", got)
	}
	if code, msg := as("alice", input("a1", "r4", user("u1", "note"))); code != http.StatusOK || !strings.Contains(msg, "n2_1") {
		t.Fatalf("alice reads: %d %s", code, msg)
	}
}

// TestAllowedOrigins: a front end served from an origin the host allows
// (WithAllowedOrigins, written as a browser writes it or not) runs from
// the browser: its preflight is answered and its responses carry the CORS
// headers; other origins are still refused, and an entry that is not an
// origin is named in every refusal.
func TestAllowedOrigins(t *testing.T) {
	a := uitest.New(t, ui.WithAllowedOrigins("HTTPS://App.Example:443/", "app.example.org"))
	srv := httptest.NewServer(agui.NewHandler(a.Host))
	t.Cleanup(srv.Close)
	const app = "https://app.example"

	pre, _ := http.NewRequest(http.MethodOptions, srv.URL, nil)
	pre.Header.Set("Origin", app)
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type,authorization")
	resp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hd := resp.Header
	if resp.StatusCode != http.StatusNoContent || hd.Get("Access-Control-Allow-Origin") != app || hd.Get("Access-Control-Allow-Credentials") != "true" ||
		hd.Get("Access-Control-Allow-Headers") != "content-type,authorization" || !strings.Contains(hd.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("the preflight: %d %v", resp.StatusCode, hd)
	}

	body, _ := json.Marshal(input("o1", "r1", user("u1", "hi")))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", app)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != app || !strings.Contains(string(b), "Hello.") {
		t.Fatalf("a run from %s: %d %v\n%s", app, resp.StatusCode, resp.Header, b)
	}

	for _, r := range []uitest.Request{
		{ContentType: "application/json", Origin: "https://other.example", Site: "cross-site"},
		{Origin: "https://other.example"}, // a preflight, below
	} {
		method := http.MethodPost
		if r.ContentType == "" {
			method = http.MethodOptions
		}
		req, _ := http.NewRequest(method, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", r.Origin)
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" ||
			!strings.Contains(string(b), `ui.WithAllowedOrigins(\"https://other.example\")`) || !strings.Contains(string(b), `\"app.example.org\": not an origin`) {
			t.Errorf("%s from another origin: %d %v\n%s", method, resp.StatusCode, resp.Header, b)
		}
	}
}
