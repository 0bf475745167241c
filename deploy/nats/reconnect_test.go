package natsdeploy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// withWorkerFile copies this folder's configuration to a temporary folder,
// with toolstream.conf including file for the workers (the one line a
// deployment changes to switch), and returns the copy's toolstream.conf.
func withWorkerFile(t testing.TB, file string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"toolstream.conf", "worker-responses.conf", "worker-inbox-prefix.conf"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "toolstream.conf" {
			const line = "include ./worker-responses.conf"
			if !strings.Contains(string(b), line) {
				t.Fatalf("toolstream.conf has no line %q", line)
			}
			b = []byte(strings.Replace(string(b), line, "include ./"+file, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "toolstream.conf")
}

// callAcrossRestart starts a remote call whose tool waits, restarts the
// server while it waits, lets it finish once agent and worker are back,
// and returns the call's result and the worker's connection. tools is the
// agent's connection for the remote client.
func callAcrossRestart(t *testing.T, d *deployment, tools ...nats.Option) (toolkit.Result, *client) {
	t.Helper()
	back := make(chan string, 4)
	reconnected := func(who string) nats.Option {
		return nats.ReconnectHandler(func(*nats.Conn) { back <- who })
	}
	started, release := make(chan struct{}), make(chan struct{})
	hold := toolkit.MustTool(toolkit.Spec{Name: "count_lines", Description: "waits to be released", ReadOnly: true},
		func(ctx context.Context, _ struct{}) (string, error) {
			close(started)
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
	w := d.connect(worker, reconnected("worker"))
	wtk := toolkit.New()
	t.Cleanup(func() { _ = wtk.Close(within(t, 5*time.Second)) })
	if err := wtk.Add(hold); err != nil {
		t.Fatal(err)
	}
	srv, err := remote.Serve(w.Conn, wtk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(within(t, 5*time.Second)) })

	a := d.connect(agent, append(tools, reconnected("agent"))...)
	// The agent gives a silent worker up after 3 s: longer than a restart.
	rc := remote.NewClient(a.Conn, remote.WithHeartbeat(250*time.Millisecond, 12))
	t.Cleanup(func() { _ = rc.Close() })
	tool, err := rc.Tool(within(t, 5*time.Second), "count_lines")
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New()
	t.Cleanup(func() { _ = tk.Close(within(t, 5*time.Second)) })
	if err := tk.Add(tool); err != nil {
		t.Fatal(err)
	}
	sess, err := tk.Session(session)
	if err != nil {
		t.Fatal(err)
	}
	batch := sess.Start(within(t, 30*time.Second), []toolkit.Call{{ID: "c1", Name: "count_lines", Args: []byte(`{}`)}})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not start on the worker within 10s")
	}
	d.restart()
	for range 2 {
		select {
		case <-back:
		case <-time.After(10 * time.Second):
			t.Fatal("agent and worker did not reconnect within 10s")
		}
	}
	close(release)
	return batch.Wait()[0], w
}

// TestWorkerLosesItsCallsOnReconnect holds what docs/security.md says of
// allow_responses (worker-responses.conf): the server keeps a connection's
// right to answer a request with the connection, so a worker whose server
// restarted while it ran a call is refused every frame of that call on its
// new connection, and the agent gives the call up as lost.
func TestWorkerLosesItsCallsOnReconnect(t *testing.T) {
	testutil.Long(t)
	d := deploy(t, "toolstream.conf")
	res, w := callAcrossRestart(t, d)
	if !isLost(res.Err) {
		t.Fatalf("the call across the restart: %s %q %v, want a *remote.LostError", res.State, res.Text(), res.Err)
	}
	waitRefusal(t, w, `Publish to "_INBOX.`)
}

// TestInboxPrefixSurvivesReconnect: with worker-inbox-prefix.conf and the
// agent's remote client on a connection with the inbox prefix that file
// names, the same call finishes: the worker may publish under the prefix
// on any connection.
func TestInboxPrefixSurvivesReconnect(t *testing.T) {
	d := deploy(t, withWorkerFile(t, "worker-inbox-prefix.conf"))
	res, w := callAcrossRestart(t, d, nats.CustomInboxPrefix("_INBOX_tools"))
	if res.IsError() || res.Text() != "released" {
		t.Fatalf("the call across the restart: %s %q %v", res.State, res.Text(), res.Err)
	}
	w.clean(t)
}

// isLost reports whether err is, or wraps, a *remote.LostError.
func isLost(err error) bool {
	_, ok := errors.AsType[*remote.LostError](err)
	return ok
}
