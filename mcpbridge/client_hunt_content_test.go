package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
)

type rewriteTransport struct {
	inner mcp.Transport
	f     func(*jsonrpc.Response)
}

func (r rewriteTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rewriteConn{c, r.f}, nil
}

type rewriteConn struct {
	mcp.Connection
	f func(*jsonrpc.Response)
}

func (r rewriteConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := r.Connection.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); ok && err == nil {
		r.f(resp)
	}
	return m, err
}

// TestClientUnknownContentType: a result with a content block of a type the
// SDK does not know fails the call (the SDK refuses the whole result) with
// an error that names the type; the connection stays and the next call
// runs. (docs/mcp.md, "Content".)
func TestClientUnknownContentType(t *testing.T) {
	ts := newTestServer(t)
	ep := ts.endpoint()
	var rewrite atomic.Bool
	rewrite.Store(true)
	wrapped := mcpbridge.TransportFunc(func(ctx context.Context) (mcp.Transport, error) {
		tr, err := ep.Transport(ctx)
		if err != nil {
			return nil, err
		}
		return rewriteTransport{tr, func(r *jsonrpc.Response) {
			var m map[string]json.RawMessage
			if r.Error == nil && json.Unmarshal(r.Result, &m) == nil && m["content"] != nil && rewrite.CompareAndSwap(true, false) {
				r.Result = json.RawMessage(`{"content":[{"type":"hologram","uri":"holo://1"}]}`)
			}
		}}, nil
	})
	tk := testutil.Kit(t)
	c := connect(t, tk, "srv", wrapped)
	res := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__srv__echo", `{"text":"x"}`))
	if !res[0].IsError() || !strings.Contains(res[0].Text(), `MCP server "srv": the call failed`) || !strings.Contains(res[0].Text(), `unrecognized content type "hologram"`) {
		t.Fatalf("unknown content type: %v %q", res[0].State, res[0].Text())
	}
	res = testutil.Run(t, tk, "s", testutil.Call("2", "mcp__srv__echo", `{"text":"again"}`))
	if res[0].IsError() || res[0].Text() != "echo: again" || c.Err() != nil || ts.dials.Load() != 1 {
		t.Fatalf("the next call: %v %q (err %v, %d dials)", res[0].State, res[0].Text(), c.Err(), ts.dials.Load())
	}
}
