package mcpbridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/interceptors"
)

// Endpoint says how to reach an MCP server. Each (re)connection asks it for
// a fresh transport: a stdio server is a new process each time.
type Endpoint interface {
	Transport(ctx context.Context) (mcp.Transport, error)
}

// TransportFunc is an Endpoint made of a function, for transports the
// package does not name (an in-memory pair in tests, a custom connection).
type TransportFunc func(ctx context.Context) (mcp.Transport, error)

// Transport implements Endpoint.
func (f TransportFunc) Transport(ctx context.Context) (mcp.Transport, error) { return f(ctx) }

// Stdio runs an MCP server as a child process and talks to it over its
// standard input and output.
type Stdio struct {
	// Command is the program to run (looked up in PATH).
	Command string
	// Args are its arguments.
	Args []string
	// Env is added to this process's environment ("KEY=value" each).
	Env []string
	// Dir is the working directory ("" for this process's).
	Dir string
}

// stderrTail is how much of a stdio server's standard error is kept, to say
// why it went away, and stderrLines how many of its last lines an error
// quotes.
const (
	stderrTail  = 2048
	stderrLines = 10
)

// Transport implements Endpoint: a new process per connection.
func (s Stdio) Transport(context.Context) (mcp.Transport, error) {
	if s.Command == "" {
		return nil, errors.New("mcpbridge: Stdio needs a Command")
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Dir = s.Dir
	cmd.Stderr = &tailWriter{max: stderrTail}
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

// stderrOf returns the end of what a stdio transport's process wrote to its
// standard error, "" for other transports.
func stderrOf(tr mcp.Transport) string {
	ct, ok := tr.(*mcp.CommandTransport)
	if !ok {
		return ""
	}
	tw, ok := ct.Command.Stderr.(*tailWriter)
	if !ok {
		return ""
	}
	return tw.String()
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	over bool // bytes were dropped from the front
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
		w.over = true
	}
	return len(p), nil
}

// String returns the last stderrLines lines kept, without the partial line
// the byte bound cut (unless it is all there is).
func (w *tailWriter) String() string {
	w.mu.Lock()
	s := string(w.buf)
	over := w.over
	w.mu.Unlock()
	if i := strings.IndexByte(s, '\n'); over && i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > stderrLines {
		lines = lines[len(lines)-stderrLines:]
	}
	return strings.Join(lines, "\n")
}

// ParseCommand splits a command line such as `npx -y some-server --flag "a b"`
// into a Stdio endpoint: words are separated by ASCII blanks, and single or
// double quotes group words (no escapes, no variables: it is not a shell).
func ParseCommand(line string) (Stdio, error) {
	var words []string
	var cur []byte
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		b := line[i]
		switch {
		case quote != 0:
			if b == quote {
				quote = 0
			} else {
				cur = append(cur, b)
			}
		case b == '"' || b == '\'':
			quote, inWord = b, true
		case isBlank(b):
			if inWord {
				words = append(words, string(cur))
				cur = cur[:0]
				inWord = false
			}
		default:
			cur = append(cur, b)
			inWord = true
		}
	}
	if quote != 0 {
		return Stdio{}, fmt.Errorf("mcpbridge: command %q: unclosed %c quote", line, quote)
	}
	if inWord {
		words = append(words, string(cur))
	}
	if len(words) == 0 {
		return Stdio{}, fmt.Errorf("mcpbridge: command %q: no program", line)
	}
	return Stdio{Command: words[0], Args: words[1:]}, nil
}

func isBlank(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// HTTP reaches an MCP server over the streamable HTTP transport.
type HTTP struct {
	// URL is the server's MCP endpoint, for example http://host/mcp.
	URL string
	// Headers are sent with every request (a fixed Authorization header,
	// for example; not with OAuth, which sets that header itself).
	Headers http.Header
	// Client makes the requests (http.DefaultClient when nil).
	Client *http.Client
	// MaxEventSize bounds one message the server streams (a server-sent
	// event), so that a server cannot make the client hold unbounded
	// memory: 0 is mcp.DefaultMaxEventSize (16 MiB, the bound of the
	// SDK's stdio and SSE transports), a negative value no bound. A larger
	// message fails the connection, which is then dialled again. Raise it
	// to take results larger than 16 MiB from a server that sends them
	// (an mcpbridge server's WithMaxResultSize).
	MaxEventSize int
	// OAuth gets the access tokens of MCP's authorization for HTTP: when
	// the server answers 401 (or 403 insufficient_scope), the handler runs
	// its grant (the server's protected-resource metadata, the
	// authorization server's metadata, client registration, the token
	// request) and the request is sent again with the token. The SDK's
	// handlers fit: auth.NewAuthorizationCodeHandler (authorization code
	// with PKCE; the host's AuthorizationCodeFetcher is the browser step)
	// and extauth.NewClientCredentialsHandler (no user). One handler serves
	// every connection of the endpoint, so a reconnection reuses its token.
	// nil: no authorization, and a 401 fails Connect with an error that
	// says so. docs/mcp.md ("Authorization") lists the grants.
	OAuth auth.OAuthHandler
}

// httpClient returns a copy of client (http.DefaultClient when nil) for a
// transport to set its Transport, and the round tripper to wrap: the
// client's own (or the default) with headers added to every request.
func httpClient(client *http.Client, headers http.Header) (http.Client, http.RoundTripper) {
	c := *cmp.Or(client, http.DefaultClient)
	base := cmp.Or(c.Transport, http.DefaultTransport)
	if len(headers) > 0 {
		base = headerTransport{base: base, h: headers}
	}
	return c, base
}

// Transport implements Endpoint.
func (h HTTP) Transport(context.Context) (mcp.Transport, error) {
	if h.URL == "" {
		return nil, errors.New("mcpbridge: HTTP needs a URL")
	}
	if h.OAuth != nil && h.Headers.Get("Authorization") != "" {
		return nil, errors.New("mcpbridge: HTTP has both OAuth and an Authorization header in Headers: the header would replace the OAuth token; keep one")
	}
	c, base := httpClient(h.Client, h.Headers)
	// Remembers a 401, so that a failed Connect can say the server wants
	// authorization rather than only "Unauthorized".
	c.Transport = &authRecorder{base: base, oauth: h.OAuth != nil}
	// The client's own reconnection policy (calls failing, tools answering
	// "unavailable", backoff) decides; the SDK's retries would only delay it.
	// The SDK's streamable client takes 0 as no bound (v1.8.0), whatever
	// its documentation says: 0 is made the documented default here.
	maxEvent := cmp.Or(h.MaxEventSize, mcp.DefaultMaxEventSize)
	return &mcp.StreamableClientTransport{Endpoint: h.URL, HTTPClient: &c, MaxRetries: 2, MaxEventSize: maxEvent, OAuthHandler: h.OAuth}, nil
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.h {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// authRecorder keeps the last 401 answer's challenge (WWW-Authenticate),
// and a POST refused as a server of the older HTTP+SSE transport refuses
// the streamable transport's.
type authRecorder struct {
	base    http.RoundTripper
	oauth   bool // HTTP.OAuth is set
	mu      sync.Mutex
	last    string // "" until a 401
	token   bool   // that request carried an Authorization header
	refused string // the status of a POST answered 400, 404 or 405
}

func (t *authRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	token := r.Header.Get("Authorization") != ""
	if ht, ok := t.base.(headerTransport); ok && ht.h.Get("Authorization") != "" {
		token = true
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		ch := strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")
		t.mu.Lock()
		t.last = interceptors.VisibleText(cutAt(ch, 300)) + " " // never "", even without a challenge
		t.token = token
		t.mu.Unlock()
	}
	if err == nil && r.Method == http.MethodPost {
		switch resp.StatusCode {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			t.mu.Lock()
			t.refused = resp.Status
			t.mu.Unlock()
		}
	}
	return resp, err
}

// recorderOf returns the recorder of an HTTP or SSE endpoint's transport.
func recorderOf(tr mcp.Transport) (rec *authRecorder, sse bool) {
	var rt http.RoundTripper
	if st, ok := tr.(*mcp.StreamableClientTransport); ok && st.HTTPClient != nil {
		rt = st.HTTPClient.Transport
		if pr, ok := rt.(progressRoundTripper); ok {
			rt = pr.base // Client.withProgress wraps it
		}
	} else if g := sseGuardOf(tr); g != nil {
		rt, sse = g.base, true
	}
	rec, _ = rt.(*authRecorder)
	return rec, sse
}

// sseHint says, when a streamable HTTP connection failed on a POST
// answered as the older HTTP+SSE transport's servers answer it (MCP's
// backwards-compatibility section: 400, 404 or 405), that SSE may reach
// the server; "" otherwise.
func sseHint(tr mcp.Transport) string {
	rec, sse := recorderOf(tr)
	if rec == nil || sse {
		return ""
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.refused == "" {
		return ""
	}
	return fmt.Sprintf("; the server answered a POST with %s: if it speaks the older HTTP+SSE transport (MCP 2024-11-05), reach it with mcpbridge.SSE (its URL often ends in /sse)", rec.refused)
}

// unauthorizedHint says what to do when an HTTP endpoint's connection
// failed after the server answered 401; "" for other failures.
func unauthorizedHint(tr mcp.Transport) string {
	rec, sse := recorderOf(tr)
	if rec == nil {
		return ""
	}
	rec.mu.Lock()
	last, token := strings.TrimSpace(rec.last), rec.token
	seen := rec.last != ""
	rec.mu.Unlock()
	if !seen {
		return ""
	}
	if last == "" {
		last = "no WWW-Authenticate challenge"
	} else {
		last = "WWW-Authenticate: " + last
	}
	switch {
	case sse && token:
		return fmt.Sprintf("; the server answered 401 Unauthorized (%s) to the Authorization header of SSE.Headers: the token is wrong or expired", last)
	case sse:
		return fmt.Sprintf("; the server answered 401 Unauthorized (%s): it wants authorization, so set an Authorization header in SSE.Headers", last)
	case rec.oauth:
		return fmt.Sprintf("; the server answered 401 Unauthorized (%s) and the OAuth handler got no token it accepts", last)
	case token:
		return fmt.Sprintf("; the server answered 401 Unauthorized (%s) to the Authorization header of HTTP.Headers: the token is wrong or expired (HTTP.OAuth gets and renews tokens, docs/mcp.md \"Authorization\")", last)
	}
	return fmt.Sprintf("; the server answered 401 Unauthorized (%s): it wants authorization, so set HTTP.OAuth (an OAuth grant, docs/mcp.md \"Authorization\") or an Authorization header in HTTP.Headers", last)
}
