package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/stream"
)

// Progress notifications are taken off the wire as they are read, not from
// the SDK's notification handler: the SDK hands a call its response as soon
// as it is read, while notifications wait in a queue for a handler
// goroutine, so the last progress of a call would often arrive after the
// call ended (and be refused). Read where the messages arrive in order, every
// progress the server sent before its response reaches the call first.

const methodProgress = "notifications/progress"

// progressTransport wraps a message transport (stdio, in memory, custom) so
// that its connection reports progress as messages are read.
type progressTransport struct {
	inner mcp.Transport
	c     *Client
}

func (t progressTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return progressConn{Connection: conn, c: t.c}, nil
}

type progressConn struct {
	mcp.Connection
	c *Client
}

func (p progressConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := p.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && err == nil && r.Method == methodProgress && !r.IsCall() {
		p.c.dispatchProgress(r.Params)
	}
	return m, err
}

// withProgress wraps tr so that progress is seen as it is read. The
// streamable HTTP transport cannot be wrapped (the SDK talks to its
// connection through unexported methods): its HTTP client's response bodies
// are read instead.
func (c *Client) withProgress(tr mcp.Transport) mcp.Transport {
	st, ok := tr.(*mcp.StreamableClientTransport)
	if !ok {
		return progressTransport{inner: tr, c: c}
	}
	hc := http.DefaultClient
	if st.HTTPClient != nil {
		hc = st.HTTPClient
	}
	cp := *hc
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = progressRoundTripper{base: base, c: c}
	st.HTTPClient = &cp
	return st
}

type progressRoundTripper struct {
	base http.RoundTripper
	c    *Client
}

func (t progressRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &sseProgress{ReadCloser: resp.Body, c: t.c}
	return resp, nil
}

// sseProgress passes a Server-Sent Events body through, reporting the
// progress notifications in its data lines.
type sseProgress struct {
	io.ReadCloser
	c    *Client
	line []byte
}

// maxSSELine bounds the line kept to look for progress; longer lines (large
// results) are passed through unexamined.
const maxSSELine = 64 << 10

func (s *sseProgress) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.keep(b)
			break
		}
		s.keep(b[:i])
		s.examine()
		s.line = s.line[:0]
		b = b[i+1:]
	}
	return n, err
}

func (s *sseProgress) keep(b []byte) {
	if len(s.line)+len(b) <= maxSSELine {
		s.line = append(s.line, b...)
	} else {
		s.line = append(s.line[:0], "x"...) // too long: not a progress line
	}
}

func (s *sseProgress) examine() {
	data, ok := bytes.CutPrefix(bytes.TrimRight(s.line, "\r"), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(methodProgress)) {
		return
	}
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) == nil && msg.Method == methodProgress && msg.ID == nil {
		s.c.dispatchProgress(msg.Params)
	}
}

// dispatchProgress turns a progress notification into the call's progress
// event: fraction progress/total when the total is given (unknown
// otherwise), the message kept.
func (c *Client) dispatchProgress(raw json.RawMessage) {
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := c.progress.Load(tok)
	if !ok {
		return
	}
	frac := -1.0
	if p.Total > 0 {
		frac = min(max(p.Progress/p.Total, 0), 1)
	}
	v.(*stream.Emitter).Progress(p.Message, frac)
}
