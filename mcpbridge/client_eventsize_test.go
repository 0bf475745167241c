package mcpbridge_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
)

// TestClientMaxEventSize: over streamable HTTP, a result larger than the
// 16 MiB bound on one server-sent event fails its call, saying so, and the
// client dials again (the go-sdk client took 0 as no bound: a server could
// make it hold any amount of memory); HTTP.MaxEventSize raises the bound
// or removes it, and the model gets the result whole.
func TestClientMaxEventSize(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 17 MiB results")
	}
	remote := srvToolkit(t)
	srvSizeTools(t, remote)
	srv := srvNew(t, remote, mcpbridge.WithMaxResultSize(-1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(nil)}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	url := "http://" + ln.Addr().String()

	const n = 17 << 20
	args := `{"n":17825792}`
	for _, tc := range []struct {
		name string
		max  int
		ok   bool
	}{
		{"default", 0, false},
		{"raised", 32 << 20, true},
		{"unbounded", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := testutil.Kit(t)
			connect(t, tk, "big", mcpbridge.HTTP{URL: url, MaxEventSize: tc.max})
			r := testutil.Run(t, tk, "s", testutil.Call("1", "mcp__big__blob", args))[0]
			if !tc.ok {
				if r.State == events.StateSuccess || !strings.Contains(r.Text(), "exceeded 16777216 bytes") {
					t.Fatalf("over the default bound: %s %.300s", r.State, r.Text())
				}
				// The connection failed; the client dials again and serves
				// the next call.
				deadline := time.Now().Add(20 * time.Second)
				for {
					r := testutil.Run(t, tk, "s", testutil.Call("2", "mcp__big__blob", `{"n":5}`))[0]
					if r.Text() == "bbbbb" {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("no call served after the failure: %s %.300s", r.State, r.Text())
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			if r.State != events.StateSuccess || len(r.Text()) != n || strings.Trim(r.Text(), "b") != "" {
				t.Fatalf("%s: %d bytes: %.200s", r.State, len(r.Text()), r.Text())
			}
		})
	}
}
