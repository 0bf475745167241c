package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzApprove: whatever a browser (or anything else on the machine) posts
// to /api/approve gets a JSON answer with a 4xx status and never a panic;
// with no call waiting, nothing can be approved.
func FuzzApprove(f *testing.F) {
	for _, seed := range []string{
		`{"session":"demo","call":"call_6","approve":true}`,
		`{"session":"demo","call":"call_6","approve":true,"args":{"title":"x"}}`,
		`{"session":"demo","call":"call_6","approve":false,"reason":"no"}`,
		`{"session":"demo","call":"call_6","approve":true,"args":[1]}`,
		`{"session":"","call":""}`, `{"extra":1}`, `null`, `[]`, `{`, ``, `{"args":"\u0000"}`,
	} {
		f.Add(seed, "application/json")
	}
	f.Add(`{"session":"demo","call":"c"}`, "text/plain")
	perms := interceptors.NewPermissions()
	desk := &approvalDesk{perms: perms, view: newTermView(io.Discard, false)}
	app := &webApp{desk: desk}
	h := pageOnly(http.HandlerFunc(app.approve)) // as the page's route serves it
	f.Fuzz(func(t *testing.T, body, ctype string) {
		req := httptest.NewRequest(http.MethodPost, "/api/approve", strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 400 || rec.Code >= 500 {
			t.Fatalf("%q (%s): status %d", body, ctype, rec.Code)
		}
		var out struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Error == "" {
			t.Fatalf("%q: answer %q is not a JSON error", body, rec.Body.String())
		}
	})
}

// TestWebRefusesForeignHosts: requests for a host name other than
// localhost (DNS rebinding) are refused before any handler runs.
func TestWebRefusesForeignHosts(t *testing.T) {
	h := securityHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for host, want := range map[string]int{
		"127.0.0.1:7070": http.StatusTeapot, "localhost:7070": http.StatusTeapot, "[::1]:7070": http.StatusTeapot,
		"10.0.0.5": http.StatusTeapot, "evil.example:7070": http.StatusMisdirectedRequest, "localhost.evil.example": http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: status %d, want %d", host, rec.Code, want)
		}
		if rec.Code == http.StatusTeapot && rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("Host %s: no Content-Security-Policy", host)
		}
	}
}

// TestRejectOnPage: a rejection posted the way the page posts it reaches
// the waiting call, which ends denied with the reason for the model, and
// the run goes on.
func TestRejectOnPage(t *testing.T) {
	addr := freeAddr(t)
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"-dir", "../..", "-listen", addr, "-nats-listen", "", "-speed", "0",
			"-once", "-approve", "page", "-session", "rejecting"}, &out, &errOut)
	}()
	body := `{"session":"rejecting","call":"call_6","approve":false,"reason":"not in this folder"}`
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Post("http://"+addr+"/api/approve", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			if resp.StatusCode != http.StatusConflict { // 409: nothing waits yet
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approval never became pending:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"rejected call_6   by the web page: not in this folder", "[call_6] write_note -> denied", "not in this folder", "states: 1 denied, 1 interrupted, 2 error, 9 success"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestApproveSuggestionOnPage: the page's approve endpoint accepts a
// suggested rule by id: an id the request did not offer is a 400 that
// names the offered ones (the call still waits); an offered one approves
// the call and its rule lets the next matching call run without asking.
func TestApproveSuggestionOnPage(t *testing.T) {
	tk := toolkit.New()
	defer closeWithin(5*time.Second, tk.Close)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_note"}, func(_ context.Context, in struct {
		Title string `json:"title"`
	}) (string, error) {
		return "saved " + in.Title, nil
	})); err != nil {
		t.Fatal(err)
	}
	perms, err := useInterceptors(tk)
	if err != nil {
		t.Fatal(err)
	}
	app := &webApp{desk: &approvalDesk{perms: perms, view: newTermView(io.Discard, false)}}
	post := func(body string) (int, string) { return postApprove(app, body) }
	sess, _ := tk.Session("p")
	run := sess.Start(context.Background(), []toolkit.Call{{ID: "c1", Name: "write_note", Args: []byte(`{"title":"a"}`)}})
	var req interceptors.ApprovalRequest
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if p := perms.Pending("p"); len(p) == 1 {
			req = p[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no approval request")
		}
	}
	tool := ""
	for _, s := range req.Suggestions {
		if s.Label == "Always allow write_note in this session" {
			tool = s.ID
		}
	}
	if tool == "" {
		t.Fatalf("suggestions %+v", req.Suggestions)
	}
	if code, body := post(`{"session":"p","call":"c1","approve":true,"suggestion":"tool-nope"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, "unknown suggestion") || !strings.Contains(body, tool) {
		t.Fatalf("unknown id: %d %s", code, body)
	}
	if code, body := post(`{"session":"p","call":"c1","approve":false,"suggestion":"` + tool + `"}`); code != http.StatusBadRequest {
		t.Fatalf("rejection with a suggestion: %d %s", code, body)
	}
	if code, body := post(`{"session":"p","call":"c1","approve":true,"suggestion":"` + tool + `"}`); code != http.StatusOK {
		t.Fatalf("accepting %s: %d %s", tool, code, body)
	}
	if r := run.Wait()[0]; r.State != events.StateSuccess {
		t.Fatalf("c1: %s %q", r.State, r.Text())
	}
	// The rule holds: nothing answers now, so a request would hang the run
	// until the test's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r := sess.Run(ctx, []toolkit.Call{{ID: "c2", Name: "write_note", Args: []byte(`{"title":"b"}`)}})[0]; r.State != events.StateSuccess {
		t.Fatalf("c2 after the rule: %s %q", r.State, r.Text())
	}
	// The dangerous-file presets still ask, rule or not.
	run = sess.Start(context.Background(), []toolkit.Call{{ID: "c3", Name: "write_note", Args: []byte(`{"title":".bashrc"}`)}})
	for deadline := time.Now().Add(10 * time.Second); len(perms.Pending("p")) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a title of .bashrc did not ask")
		}
	}
	if code, body := post(`{"session":"p","call":"c3","approve":false,"reason":"no"}`); code != http.StatusOK {
		t.Fatalf("reject: %d %s", code, body)
	}
	if r := run.Wait()[0]; r.State != events.StateDenied {
		t.Fatalf("c3: %s", r.State)
	}
}
