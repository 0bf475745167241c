package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/aisdk"
)

// TestBrowserCrossSite (issue 27, item 4): in headless Chromium, a page
// served from another origin (http://localhost:<another port>, cross-site
// to http://127.0.0.1) tries what any web page can: fetch with mode
// "no-cors" (no preflight, the browser's cookies along) a text/plain or
// form body that answers a waiting approval, to the demo's approval
// endpoint, its AG-UI and AI SDK routes and the chat's resume route, and
// to the library's handlers served bare (no wrapper of the demo's: their
// own checks). The browser sends every request (the bare server records
// what arrived, with the Origin and Sec-Fetch-Site Chromium set), and no
// call is approved: the demo's tour still waits for the page, and every
// UI thread still waits for its answer.
func TestBrowserCrossSite(t *testing.T) {
	testutil.Long(t)
	chrome := findChromium(t)
	if testing.Short() {
		t.Skip("drives a browser")
	}
	ctx, cancelBrowser, checkPageErrors := newBrowser(t, chrome)
	defer cancelBrowser()

	demo := startDemo(t, "--dir", "../..", "--approve", "page", "--speed", "0", "--once=false", "--session", "xsite")
	defer demo.Stop()
	base := demo.URL()
	waitForAsk(t, demo)
	bare := newBareUI(t)

	// Threads that wait: the demo's AG-UI thread and chat, and the bare
	// handlers' (asked from Go, as their own front ends would).
	aguiResume := func(id string) string {
		return `{"threadId":"xsite","runId":"r2","messages":[{"id":"u1","role":"user","content":"` + overview + `"}],"resume":[{"interruptId":"` + id + `","status":"resolved","payload":{"approved":true}}]}`
	}
	chatAnswer := func(msgID, call string) string {
		return `{"id":"xsite","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"` + overview + `"}]},` +
			`{"id":"` + msgID + `","role":"assistant","parts":[{"type":"dynamic-tool","toolName":"write_note","toolCallId":"` + call + `","state":"approval-responded","approval":{"id":"` + call + `","approved":true}}]}]}`
	}
	demoInterrupt := aguiAsk(t, base+"/agui", "xsite")
	demoMsg, demoCall := chatAsk(t, base+"/api/chat", "xsite")
	bareInterrupt := aguiAsk(t, bare.url+"/agui", "xsite")
	bareMsg, bareCall := chatAsk(t, bare.url+"/api/chat", "xsite")

	type attack struct {
		URL    string `json:"url"`
		Method string `json:"method"`
		Type   string `json:"type,omitempty"`
		Body   string `json:"body,omitempty"`
	}
	var attacks []attack
	for _, typ := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		attacks = append(attacks,
			attack{base + "/api/approve", "POST", typ, `{"session":"xsite","call":"call_6","approve":true}`},
			attack{base + "/agui", "POST", typ, aguiResume(demoInterrupt)},
			attack{base + "/api/chat", "POST", typ, chatAnswer(demoMsg, demoCall)},
			attack{bare.url + "/agui", "POST", typ, aguiResume(bareInterrupt)},
			attack{bare.url + "/api/chat", "POST", typ, chatAnswer(bareMsg, bareCall)},
		)
	}
	attacks = append(attacks,
		attack{URL: base + "/api/chat/xsite/stream", Method: "GET"},
		attack{URL: bare.url + "/api/chat/xsite/stream", Method: "GET"},
	)
	list, _ := json.Marshal(attacks)

	// The other site: a page on http://localhost:<port>, which runs them.
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>another site</title><p>Nothing to see here.`)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evil.Listener = l
	evil.Start()
	defer evil.Close()
	evilURL := "http://localhost:" + fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	if err := pageDo(ctx, 60*time.Second, chromedp.Navigate(evilURL+"/")); err != nil {
		t.Fatalf("opening the other site's page: %v", err)
	}
	js := `(async () => {
		const out = [];
		for (const a of ` + string(list) + `) {
			const init = { method: a.method, mode: 'no-cors', credentials: 'include' };
			if (a.body) { init.body = a.body; init.headers = { 'Content-Type': a.type }; }
			try {
				const r = await fetch(a.url, init);
				out.push(a.method + ' ' + a.url + ' (' + (a.type || '') + '): sent, response ' + r.type);
			} catch (e) {
				out.push(a.method + ' ' + a.url + ': ' + e);
			}
		}
		return out;
	})()`
	sent, err := pageRun(ctx, 60*time.Second, chromedp.Evaluate[[]string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the other site's attacks: %v", err)
	}
	for _, s := range sent {
		t.Log(s)
		if !strings.Contains(s, "sent, response opaque") {
			t.Errorf("the browser did not send it: %s", s)
		}
	}

	// Every request reached the bare server from the browser, marked as
	// the other site's, and was refused.
	arrived := bare.requests()
	if len(arrived) != 7 {
		t.Errorf("%d requests reached the bare handlers, want 7: %+v", len(arrived), arrived)
	}
	for _, a := range arrived {
		t.Logf("bare server: %s %s Origin %q Sec-Fetch-Site %q Content-Type %q -> %d", a.method, a.path, a.origin, a.site, a.ctype, a.status)
		if a.site != "cross-site" || a.status != http.StatusForbidden {
			t.Errorf("the bare handlers took %s %s from the other site (Sec-Fetch-Site %q): %d", a.method, a.path, a.site, a.status)
		}
	}

	// Nothing was approved.
	if out := demo.stdout.String(); strings.Contains(out, "approved call_6") {
		t.Errorf("the other site approved the demo's call_6")
	}
	for _, w := range []struct {
		session string // the thread's session: the host's prefix and "xsite"
		call    string
	}{{"bare-agui-xsite", bareInterrupt}, {"bare-chat-xsite", bareCall}} {
		if !slices.ContainsFunc(bare.perms.Pending(w.session), func(r interceptors.ApprovalRequest) bool { return r.CallID == w.call }) {
			t.Errorf("the bare handlers' call %s no longer waits: the other site decided it", w.call)
		}
	}
	again := frames(t, base+"/agui", `{"threadId":"xsite","runId":"r3","messages":[{"id":"u1","role":"user","content":"`+overview+`"}]}`)
	if !strings.Contains(again[len(again)-1], demoInterrupt) {
		t.Errorf("the demo's AG-UI thread no longer waits for %s: %s", demoInterrupt, again[len(again)-1])
	}
	checkPageErrors()
	cancelBrowser()
}

// bareUI is the library's AG-UI and AI SDK handlers served as they are,
// without the demo's wrapper, on an agent whose model calls write_note
// (which asks for approval), then answers.
type bareUI struct {
	url        string
	agui, chat *ui.Host
	perms      *interceptors.Permissions

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, path, origin, site, ctype string
	status                            int
}

func newBareUI(t *testing.T) *bareUI {
	t.Helper()
	tk := toolkit.New()
	t.Cleanup(func() { closeWithin(5*time.Second, tk.Close) })
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_note", Description: "Saves a note."}, func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return "saved " + in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	perms := interceptors.NewPermissions(interceptors.WithApprovalTimeout(5 * time.Minute))
	if err := tk.Use(perms.Interceptor()); err != nil {
		t.Fatal(err)
	}
	model := agent.ModelFunc(func(_ context.Context, req *agent.Request) (*agent.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleUser {
			return &agent.Reply{Calls: []toolkit.Call{{ID: "w1", Name: "write_note", Args: []byte(`{"text":"overview"}`)}}, Finish: agent.FinishToolCalls}, nil
		}
		return &agent.Reply{Text: "Done.", Finish: agent.FinishStop}, nil
	})
	b := &bareUI{perms: perms}
	b.agui = ui.NewHost(tk, agent.New(model), ui.WithPermissions(perms), ui.WithSessionPrefix("bare-agui-"))
	b.chat = ui.NewHost(tk, agent.New(model), ui.WithPermissions(perms), ui.WithSessionPrefix("bare-chat-"))
	t.Cleanup(b.agui.Close)
	t.Cleanup(b.chat.Close)
	chat := aisdk.NewHandler(b.chat)
	mux := http.NewServeMux()
	mux.Handle("/agui", agui.NewHandler(b.agui))
	mux.Handle("/api/chat", chat)
	mux.Handle("/api/chat/{id}/stream", chat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" { // the browser's, not the test's own
			b.mu.Lock()
			b.seen = append(b.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Content-Type"), rec.status})
			b.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

func (b *bareUI) requests() []seenRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

// statusRecorder keeps the status a handler wrote; Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
