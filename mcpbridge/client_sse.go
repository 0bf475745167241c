package mcpbridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SSE reaches an MCP server over the older HTTP+SSE transport (MCP
// revision 2024-11-05), which servers that predate streamable HTTP still
// speak: a GET on URL opens an event stream whose first event, "endpoint",
// names where to POST the client's messages; the server's messages come
// down the stream. Use HTTP for a server that speaks streamable HTTP; the
// client does not try one transport after the other (a wrong URL would
// then fail twice, with the second error hiding the first).
type SSE struct {
	// URL is the server's SSE endpoint, often http://host/sse.
	URL string
	// Headers are sent with every request, the GET and the POSTs.
	Headers http.Header
	// Client makes the requests (http.DefaultClient when nil).
	Client *http.Client
	// MaxEventSize bounds one event of the stream, as HTTP.MaxEventSize: 0
	// is mcp.DefaultMaxEventSize (16 MiB), a negative value no bound. A
	// larger event ends the connection, which is then dialled again.
	MaxEventSize int
}

// Transport implements Endpoint.
func (s SSE) Transport(context.Context) (mcp.Transport, error) {
	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		return nil, errors.New("mcpbridge: SSE needs a URL")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("mcpbridge: SSE URL %q: want an absolute http or https URL", trimQuote(s.URL, maxCommandQuote))
	}
	c, base := httpClient(s.Client, s.Headers)
	maxEvent := cmp.Or(s.MaxEventSize, mcp.DefaultMaxEventSize)
	g := &sseGuard{base: &authRecorder{base: base}, stream: u, maxEvent: maxEvent}
	c.Transport = g
	return &sseTransport{inner: &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: &c, MaxEventSize: maxEvent}, guard: g}, nil
}

// sseTransport is the SDK's SSE client transport with the event stream
// detached from the connection attempt: the SDK ties its GET to the context
// Connect gets, which ends when the attempt does. The attempt still bounds
// the wait for the endpoint event.
type sseTransport struct {
	inner *mcp.SSEClientTransport
	guard *sseGuard
}

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.inner.Connect(sctx)
	if !stop() { // the attempt ended while the stream was opening
		if conn != nil {
			_ = conn.Close()
		}
		cancel()
		return nil, errors.Join(ctx.Err(), err)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return sseConn{Connection: conn, cancel: cancel}, nil
}

type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// sseGuard checks what the server answers: the GET must open an event
// stream (anything else is not an SSE server, and the SDK would wait on a
// JSON body or a 404 page for an event), and the POSTs must go to the
// stream's own origin (the endpoint event is the server's word, and the
// POSTs carry Headers). It remembers what went wrong, for dialFailed, and
// marks an event over the size bound, for the error that ends the session.
type sseGuard struct {
	base     http.RoundTripper
	stream   *url.URL
	maxEvent int

	mu       sync.Mutex
	problem  string // why the stream or a POST was refused
	opened   bool   // the GET opened an event stream
	posted   bool   // a POST went out: the endpoint event came
	tooLarge bool   // an event went over maxEvent
}

func (g *sseGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		if r.URL.Scheme != g.stream.Scheme || r.URL.Host != g.stream.Host {
			return nil, g.refuse(fmt.Sprintf("the server's endpoint event sends the messages to %s, another origin than the stream's (%s://%s): refused, since they carry the request headers",
				trimQuote(r.URL.Scheme+"://"+r.URL.Host, 200), g.stream.Scheme, g.stream.Host))
		}
		g.mu.Lock()
		g.posted = true
		g.mu.Unlock()
		return g.base.RoundTrip(r)
	}
	resp, err := g.base.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ct)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return resp, nil // the SDK's error, with authRecorder's hint
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		resp.Body.Close()
		return nil, g.refuse(fmt.Sprintf("its GET answered %s: not an MCP server of the HTTP+SSE transport (MCP 2024-11-05) at this URL; check the URL (often .../sse), or reach a streamable HTTP server with mcpbridge.HTTP", resp.Status))
	case media != "text/event-stream":
		resp.Body.Close()
		if ct == "" {
			ct = "none"
		}
		return nil, g.refuse(fmt.Sprintf("its GET answered %s with Content-Type %s, not an event stream: not an MCP server of the HTTP+SSE transport (MCP 2024-11-05); reach a streamable HTTP server with mcpbridge.HTTP", resp.Status, trimQuote(ct, 100)))
	}
	g.mu.Lock()
	g.opened = true
	g.mu.Unlock()
	if g.maxEvent > 0 {
		resp.Body = newEventMeter(resp.Body, g)
	}
	return resp, nil
}

func (g *sseGuard) refuse(why string) error {
	g.mu.Lock()
	g.problem = why
	g.mu.Unlock()
	return errors.New(why)
}

// dialNote says why a connection attempt over SSE failed, when the guard
// knows better than the SDK's error: "" otherwise, and for a nil guard (not
// an SSE transport).
func (g *sseGuard) dialNote() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.problem != "":
		return g.problem
	case g.opened && !g.posted:
		return "its GET opened an event stream but no endpoint event came, the first event of the HTTP+SSE transport (MCP 2024-11-05): is it an SSE server? A streamable HTTP server is reached with mcpbridge.HTTP"
	}
	return ""
}

// goneNote says why the stream ended, when an event went over the bound
// ("" otherwise, and for a nil guard: not an SSE transport).
func (g *sseGuard) goneNote() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tooLarge {
		return fmt.Sprintf("an event of the server's stream exceeded %d bytes, the bound SSE.MaxEventSize sets", g.maxEvent)
	}
	return ""
}

// eventMeter passes the event stream through, noticing an event larger
// than the bound: the SDK then ends the stream without saying why.
type eventMeter struct {
	io.ReadCloser
	g     *sseGuard
	event int  // bytes of the event being read
	blank bool // the line being read is empty so far
}

func newEventMeter(body io.ReadCloser, g *sseGuard) *eventMeter {
	return &eventMeter{ReadCloser: body, g: g, blank: true}
}

func (m *eventMeter) Read(p []byte) (int, error) {
	n, err := m.ReadCloser.Read(p)
	over := false
	for _, b := range p[:n] {
		m.event++ // counted as the SDK does: every byte of the event's lines
		over = over || m.event > m.g.maxEvent
		switch b {
		case '\n':
			if m.blank {
				m.event = 0 // an empty line ends the event
			}
			m.blank = true
		case '\r':
		default:
			m.blank = false
		}
	}
	if over {
		m.g.mu.Lock()
		m.g.tooLarge = true
		m.g.mu.Unlock()
	}
	return n, err
}

// sseGuardOf returns the guard of an SSE transport, nil for others.
func sseGuardOf(tr mcp.Transport) *sseGuard {
	if t, ok := tr.(*sseTransport); ok {
		return t.guard
	}
	return nil
}
