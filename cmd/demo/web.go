package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

//go:embed web
var webFiles embed.FS

// webApp is the live page's back end: the page itself, the session's
// events through the SSE bridge (replayed from the durable stream, so a
// reload shows the whole history), and the answers to approval requests.
type webApp struct {
	bus     *natsbus.Bus
	tk      *toolkit.Toolkit
	desk    *approvalDesk
	session string
	model   string
	mcp     http.Handler            // the toolkit over MCP (streamable HTTP), or nil
	elicit  *mcpbridge.Elicitations // MCP servers' requests for the user's input, or nil
	ui      *uiProtocols            // AG-UI and the AI SDK's UI message stream, or nil
}

func (a *webApp) handler() http.Handler {
	static, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.Handle("GET /events", a.bus.SSEHandler())
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /api/info", a.info)
	mux.Handle("POST /api/approve", pageOnly(http.HandlerFunc(a.approve)))
	if a.mcp != nil {
		mux.Handle("/mcp", pageOnly(a.mcp))
	}
	if a.ui != nil {
		a.ui.mount(mux)
	}
	return securityHeaders(mux)
}

// hostAllowed refuses requests addressed to a host name other than
// localhost: a page elsewhere that rebinds its own name to 127.0.0.1 (DNS
// rebinding) would otherwise pass for same-origin and answer approvals.
func hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return host == "localhost" || net.ParseIP(host) != nil
}

// securityHeaders keeps the page to itself: no framing, no outside
// scripts, no guessing of content types, no foreign host names.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host) {
			http.Error(w, "this page answers on localhost and IP addresses only", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

type infoBody struct {
	Session  string   `json:"session"`
	Sessions []string `json:"sessions"`
	Model    string   `json:"model"`
	NATS     string   `json:"nats,omitempty"`
	Stream   string   `json:"stream,omitempty"`
}

func (a *webApp) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, infoBody{
		Session: a.session, Sessions: a.tk.Sessions(), Model: a.model,
		NATS: a.bus.ClientURL(), Stream: a.bus.Stream(),
	})
}

// approveBody is what the page posts to answer an approval request.
type approveBody struct {
	Session string          `json:"session"`
	Call    string          `json:"call"`
	Approve bool            `json:"approve"`
	Args    json.RawMessage `json:"args,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Always  bool            `json:"always,omitempty"`
	// Suggestion is the id of a suggested rule to accept with the approval.
	Suggestion string `json:"suggestion,omitempty"`
}

// approve answers an approval request (behind pageOnly: the page's own
// origin, JSON).
func (a *webApp) approve(w http.ResponseWriter, r *http.Request) {
	var body approveBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad request body: " + err.Error()})
		return
	}
	if body.Session == "" || body.Call == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "session and call are required"})
		return
	}
	if len(body.Args) > 0 && string(body.Args) != "null" {
		var obj map[string]any
		if err := json.Unmarshal(body.Args, &obj); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "args must be a JSON object: " + err.Error()})
			return
		}
	} else {
		body.Args = nil
	}
	if body.Suggestion != "" && !body.Approve {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a suggestion is accepted with an approval, not a rejection"})
		return
	}
	if a.answerElicitation(w, body) {
		return
	}
	d := decision{approve: body.Approve, args: body.Args, reason: body.Reason, always: body.Always, suggestion: body.Suggestion, who: "the web page"}
	if !d.approve && d.reason == "" {
		d.reason = "rejected on the web page"
	}
	if err := a.desk.decide(body.Session, body.Call, d); err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, interceptors.ErrNotPending):
			status = http.StatusConflict
		case errors.Is(err, interceptors.ErrUnknownSuggestion):
			status = http.StatusBadRequest
		}
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// pageOnly refuses what a page on another origin can make a browser
// send: the checks the ui handlers make first, with no origin allowed but the
// page's own. A browser request from another origin is refused (403),
// as net/http's CrossOriginProtection decides (Sec-Fetch-Site, else
// Origin against Host), GET included (a resume reads a chat and marks its
// response delivered); a body not declared as JSON gets 415 (text/plain
// and forms need no preflight). Requests without browser headers (curl,
// an MCP client) go on.
func pageOnly(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check := r
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			check = r.WithContext(r.Context())
			check.Method = http.MethodPost
		}
		if cop.Check(check) != nil {
			from := fmt.Sprintf("origin %q", r.Header.Get("Origin"))
			if r.Header.Get("Origin") == "" {
				from = fmt.Sprintf("a %s page (Sec-Fetch-Site: %s)", r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Site"))
			}
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf(
				"a request from %s is refused: the demo answers its own page (http://%s) only, which a page elsewhere must not stand in for; call from a server or the command line instead", from, r.Host)})
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": fmt.Sprintf(
					"Content-Type %q is refused: send the body as JSON with Content-Type: application/json (a page on any site can make a browser send text/plain or a form here, not JSON)", r.Header.Get("Content-Type"))})
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// webServer is the running page.
type webServer struct {
	URL string
	srv *http.Server
	// taken is the address asked for when it was taken and the page
	// listens on another port ("" when it got the one asked for).
	taken string
}

// serveWeb listens on addr (any free loopback port if it is taken) and
// serves the app until Shutdown.
func serveWeb(addr string, app *webApp) (*webServer, error) {
	l, err := net.Listen("tcp", addr)
	taken := ""
	if err != nil && addrInUse(err) {
		host, _, _ := net.SplitHostPort(addr)
		l, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
		taken = addr
	}
	if err != nil {
		return nil, fmt.Errorf("web page on %s: %w", addr, err)
	}
	// Event streams never go idle: Shutdown cancels their requests' context
	// so that they end instead of holding the server open.
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: app.handler(), ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	srv.RegisterOnShutdown(cancel)
	go func() { _ = srv.Serve(l) }()
	host := l.Addr().String()
	if tcp, ok := l.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = fmt.Sprintf("127.0.0.1:%d", tcp.Port)
	}
	return &webServer{URL: "http://" + host, srv: srv, taken: taken}, nil
}

// Shutdown stops the server; open event streams are cut when ctx ends.
func (s *webServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return s.srv.Close()
	}
	return err
}

// answerElicitation answers an MCP server's request for the user's input
// (an approval event whose Note is "elicitation") if one waits for the
// call: Approve accepts with args as the form's content, Reject declines.
// It reports whether it answered.
func (a *webApp) answerElicitation(w http.ResponseWriter, body approveBody) bool {
	if a.elicit == nil || !slices.ContainsFunc(a.elicit.Pending(body.Session), func(r interceptors.ApprovalRequest) bool { return r.CallID == body.Call }) {
		return false
	}
	var err error
	if body.Approve {
		content := map[string]any{}
		if body.Args != nil {
			_ = json.Unmarshal(body.Args, &content) // checked to be an object above
		}
		err = a.elicit.Accept(body.Session, body.Call, content)
	} else {
		err = a.elicit.Decline(body.Session, body.Call)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return true
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return true
}
