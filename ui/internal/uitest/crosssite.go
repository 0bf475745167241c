package uitest

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/toolstream/toolstream/interceptors"
)

// Request is how a test request presents itself: its Content-Type and
// the headers a browser sets and a page cannot (Origin, Sec-Fetch-Site).
// Empty values are left out.
type Request struct {
	Name        string
	ContentType string
	Origin      string
	Site        string // Sec-Fetch-Site
	// Status and Says are what the handler must answer: the status and
	// words of its refusal.
	Status int
	Says   []string
}

// CrossSiteCases are the requests a page on another site can make a
// browser send without a preflight (a "simple" content type: text/plain,
// a form; Chromium adds Origin and Sec-Fetch-Site), the same with JSON as
// a browser without Sec-Fetch-Site sends it, a page on another port of the
// server's own host, and requests with no browser headers but a body that
// is not declared as JSON. Each must be refused.
func CrossSiteCases() []Request {
	const evil = "http://evil.example"
	sameHost := "http://127.0.0.1:9" // the server's host, another port
	refusal := []string{evil, "ui.WithAllowedOrigins"}
	return []Request{
		{Name: "text/plain from another site", ContentType: "text/plain;charset=UTF-8", Origin: evil, Site: "cross-site", Status: http.StatusForbidden, Says: refusal},
		{Name: "a form from another site", ContentType: "application/x-www-form-urlencoded", Origin: evil, Site: "cross-site", Status: http.StatusForbidden, Says: refusal},
		{Name: "a multipart form from another site", ContentType: "multipart/form-data; boundary=x", Origin: evil, Site: "cross-site", Status: http.StatusForbidden, Says: refusal},
		{Name: "JSON from another site without Sec-Fetch-Site", ContentType: "application/json", Origin: evil, Status: http.StatusForbidden, Says: refusal},
		{Name: "another port of the same host", ContentType: "text/plain", Origin: sameHost, Site: "same-site", Status: http.StatusForbidden, Says: []string{sameHost}},
		{Name: "cross-site without an Origin", ContentType: "text/plain", Site: "cross-site", Status: http.StatusForbidden, Says: []string{"cross-site"}},
		{Name: "text/plain without browser headers", ContentType: "text/plain", Status: http.StatusUnsupportedMediaType, Says: []string{"application/json", "text/plain"}},
		{Name: "a form without browser headers", ContentType: "application/x-www-form-urlencoded", Status: http.StatusUnsupportedMediaType, Says: []string{"application/json"}},
		{Name: "no content type", Status: http.StatusUnsupportedMediaType, Says: []string{"application/json"}},
	}
}

// Send sends body to url as r says and returns the status and the whole
// answer as text.
func Send(t testing.TB, method, url string, r Request, body []byte) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": r.ContentType, "Origin": r.Origin, "Sec-Fetch-Site": r.Site} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// StillWaits fails the test unless thread id's run is paused on call and
// the permissions interceptor still has it pending: nothing decided it.
func (a *Agent) StillWaits(t testing.TB, id, call string) {
	t.Helper()
	th := a.Threads.Lookup(id)
	if th == nil {
		t.Fatalf("no thread %q", id)
	}
	is := func(r interceptors.ApprovalRequest) bool { return r.CallID == call }
	if !slices.ContainsFunc(a.Perms.Pending(th.Session().ID()), is) {
		t.Fatalf("call %s of thread %q no longer waits: something decided it", call, id)
	}
	if !slices.ContainsFunc(th.Paused(), is) {
		t.Fatalf("thread %q is not paused on %s: %v", id, call, th.Paused())
	}
}
