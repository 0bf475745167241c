package mcpbridge_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// TestServerClientDisconnects: a client that goes away in the middle of a
// call (with and without a progress token) gets its call interrupted in the
// toolkit: the handler's context ends and nothing is left running.
func TestServerClientDisconnects(t *testing.T) {
	for _, v := range srvVersions {
		for _, withToken := range []bool{false, true} {
			t.Run("version="+v, func(t *testing.T) {
				rs := &srvResults{ch: make(chan *events.Event, 16)}
				tk := srvToolkit(t, toolkit.WithInlineObserver(rs))
				started := make(chan struct{})
				if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "hang", Description: "Waits until cancelled."},
					func(ctx context.Context, _ struct{}) (string, error) {
						close(started)
						<-ctx.Done()
						return "", ctx.Err()
					})); err != nil {
					t.Fatal(err)
				}
				s := srvNew(t, tk)
				cut := &cuttable{}
				cs := srvConnectOver(t, s, cut, v)
				params := &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}}
				if withToken {
					params.SetProgressToken("p")
				}
				errc := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(context.Background(), params)
					errc <- err
				}()
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("the call never started")
				}
				cut.cut() // the client goes away: its connection breaks, no goodbye
				select {
				case ev := <-rs.ch:
					if ev.Tool != "hang" || ev.Result.State != events.StateInterrupted {
						t.Fatalf("result event = %+v %+v", ev, ev.Result)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the toolkit call went on after its client disconnected")
				}
				if err := <-errc; err == nil {
					t.Fatal("the client's call returned no error after it closed")
				}
			})
		}
	}
}

// TestServerUnknownToolAndHugeArguments: a call to a tool the server does not
// list is an error that names the tool; a call with 2 MiB of arguments
// runs, and the session goes on. (Larger results: TestServerEchoOfEightMiB,
// TestServerMaxResultSize.)
func TestServerUnknownToolAndHugeArguments(t *testing.T) {
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			tk := srvToolkit(t)
			cs := srvConnect(t, srvNew(t, tk), nil, v)
			// The bound only turns a hang into a failure: with -race on a loaded
			// machine (load 8 on 2 cores) the 2 MiB call alone took over 20 s.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
			t.Logf("unknown: %v %+v", err, res)
			if err == nil && (res == nil || !res.IsError) {
				t.Fatalf("unknown tool: %+v", res)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = res.Content[0].(*mcp.TextContent).Text
			}
			if !strings.Contains(msg, "no_such_tool") {
				t.Fatalf("the error does not name the tool: %q", msg)
			}
			big := strings.Repeat("x", 2<<20)
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": big}})
			if err != nil || res.IsError || res.StructuredContent == nil {
				t.Fatalf("2 MiB of arguments: %v %v", err, res != nil && res.IsError)
			}
			// The session still works.
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("after huge arguments: %v %+v", err, res)
			}
		})
	}
}

// cuttable is a client transport whose connection the test can break, as a
// client process that dies would: cs.Close waits for calls in flight.
type cuttable struct {
	mcp.Transport
	mu   sync.Mutex
	conn mcp.Connection
}

func (c *cuttable) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	return conn, err
}

func (c *cuttable) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.Close()
}

// srvConnectOver is srvConnect through a cuttable client transport.
func srvConnectOver(t testing.TB, s *mcpbridge.Server, cut *cuttable, version string) *mcp.ClientSession {
	t.Helper()
	return srvConnectVia(t, s, nil, version, func(ct mcp.Transport) mcp.Transport {
		cut.Transport = ct
		return cut
	})
}
