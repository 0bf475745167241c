// Package uitest is the agent the UI protocol handlers' tests serve: a
// toolkit publishing to an embedded NATS server (durable), real tools
// that stream progress and deltas, fail, get their result replaced (a
// reset) or need approval, and a scripted model that calls them.
package uitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/internal/thread"
)

// Agent is what a test serves.
type Agent struct {
	Bus   *natsbus.Bus
	TK    *toolkit.Toolkit
	Perms *interceptors.Permissions
	Host  *ui.Host
	// Threads is the host's plumbing (ui/internal/thread), for tests that
	// look inside its threads.
	Threads *thread.Host
	// Gate holds the gate tool's calls until it is closed.
	Gate chan struct{}
}

// New builds the agent, its host with opts besides the test's own;
// everything is closed when the test ends.
func New(t testing.TB, opts ...ui.Option) *Agent {
	t.Helper()
	bus := natstest.Bus(t, natsbus.WithDurable(natsbus.Durable{}))
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	t.Cleanup(func() { _ = tk.Close(context.Background()) })
	gate := make(chan struct{})
	if err := Register(tk, gate); err != nil {
		t.Fatal(err)
	}
	gm, err := groups.Install(tk)
	if err == nil {
		err = gm.Add(groups.Group{Name: "extras", Description: "More tools.", Tools: []string{"extra"}})
	}
	if err != nil {
		t.Fatal(err)
	}
	lib, err := skills.NewLibrary(skills.Repository{Name: "test", FS: fstest.MapFS{
		"tips/SKILL.md": {Data: []byte("---\nname: tips\ndescription: Tips for the extra tool.\ntool-groups: [extras]\n---\nCall extra.\n")},
	}})
	if err == nil {
		_, err = skills.Install(tk, lib, skills.WithGroups(gm))
	}
	if err != nil {
		t.Fatal(err)
	}
	perms := interceptors.NewPermissions(interceptors.WithApprovalTimeout(time.Minute),
		interceptors.WithRules(interceptors.Rule{Tool: groups.MetaTool, Decision: interceptors.Allow},
			interceptors.Rule{Tool: skills.LoadTool, Decision: interceptors.Allow}))
	if err := tk.Use(perms.Interceptor(), Replace()); err != nil {
		t.Fatal(err)
	}
	loop := agent.New(Model(), agent.WithName("scripted"), agent.WithRetry(agent.RetryPolicy{Attempts: 2, Backoff: time.Millisecond}))
	host := ui.NewHost(tk, loop, append([]ui.Option{ui.WithPermissions(perms), ui.WithSystem("You are a test.")}, opts...)...)
	t.Cleanup(host.Close)
	return &Agent{Bus: bus, TK: tk, Perms: perms, Host: host, Threads: (*thread.Host)(host), Gate: gate}
}

// Register adds the tools: count (progress and deltas), broken (fails),
// flaky (its result is replaced by an interceptor: a reset), write_note
// (not read-only: the permissions interceptor asks), gate (waits until
// gate is closed, then says "opened").
func Register(tk *toolkit.Toolkit, gate <-chan struct{}) error {
	type none struct{}
	type note struct {
		Text string `json:"text"`
	}
	return errors.Join(
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "count", Description: "Counts to three.", ReadOnly: true, ConcurrencySafe: true},
			func(ctx context.Context, _ none) (string, error) {
				em := stream.From(ctx)
				for i, w := range []string{"one ", "two ", "three"} {
					em.Progress("counting "+strings.TrimSpace(w), float64(i+1)/3)
					_ = em.Text(w)
					time.Sleep(5 * time.Millisecond)
				}
				return "", nil
			})),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "broken", Description: "Always fails.", ReadOnly: true, ConcurrencySafe: true},
			func(ctx context.Context, _ none) (string, error) {
				return "", errors.New("the disk is on fire")
			})),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "flaky", Description: "Its first words are taken back.", ReadOnly: true},
			func(ctx context.Context, _ none) (string, error) {
				_ = stream.From(ctx).Text("draft")
				return "", nil
			})),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "gate", Description: "Waits for the test.", ReadOnly: true},
			func(ctx context.Context, _ none) (string, error) {
				stream.From(ctx).Progress("waiting", 0)
				select {
				case <-gate:
				case <-ctx.Done():
					return "", ctx.Err()
				}
				return "opened", nil
			})),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "big", Description: "A JSON result larger than a NATS message.", ReadOnly: true},
			func(ctx context.Context, _ none) (string, error) {
				return "", stream.From(ctx).Part(events.Part{Type: events.PartJSON, JSON: BigJSON()})
			})),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "extra", Description: "In the extras group.", ReadOnly: true},
			func(ctx context.Context, _ none) (string, error) { return "extra!", nil })),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "ask", Description: "Changes things; runs beside others.", ConcurrencySafe: true},
			func(ctx context.Context, _ none) (string, error) { return "asked", nil })),
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_note", Description: "Saves a note."},
			func(ctx context.Context, in note) (string, error) {
				return "saved: " + in.Text, nil
			})),
	)
}

// Replace is an interceptor that replaces flaky's result, so that its
// content starts over (a reset delta).
func Replace() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "replace", Tools: []string{"flaky"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
			next(ctx, inv)
			return toolkit.Success(events.Text("final"))
		}}
}

// Model plays by the last user message:
//
//   - "tour": turn 1 says "Let me count." and calls count and broken
//     (streamed); turn 2 calls flaky and write_note; turn 3 answers "Done.".
//   - "note": calls write_note twice, then answers.
//   - "gate": says "Waiting." and calls gate, then answers.
//   - "big": calls big, then answers.
//   - "bigwait": calls big, then gate, then answers.
//   - "cut": answers "The three causes are: first, the", cut at the
//     output token limit (FinishLength).
//   - "groups": switches the extras group on (reset_tools), calls extra
//     (in it), then answers.
//   - "skill": loads the tips skill (which switches extras on), then
//     answers.
//   - "both": calls count and ask (which needs approval) in one stage.
//   - "two": calls ask twice in one stage: two approvals wait at once.
//   - "slow": calls write_note (which asks for approval), then gate,
//     then answers.
//   - "retry": the first attempt says "Oops " and fails (retryable); the
//     retry answers "Hello.".
//   - anything else: answers "Hello." at once.
func Model() agent.Model {
	var mu sync.Mutex
	attempts := map[int]int{} // "retry" attempts by conversation length
	return agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		var task string
		turn := 0
		for _, m := range req.Messages {
			switch m.Role {
			case agent.RoleUser:
				task, turn = m.Text(), 0
			case agent.RoleAssistant:
				turn++
			}
		}
		say := func(text string) {
			for _, w := range strings.SplitAfter(text, " ") {
				req.Send(agent.Chunk{Kind: agent.ChunkText, Text: w})
			}
		}
		calls := func(cs ...toolkit.Call) []toolkit.Call {
			for i, c := range cs {
				req.Send(agent.Chunk{Kind: agent.ChunkCall, Index: i, CallID: c.ID, Name: c.Name})
				a := string(c.Args)
				req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: a[:len(a)/2]})
				req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: a[len(a)/2:]})
			}
			return cs
		}
		id := func(s string) string { return fmt.Sprintf("%s_%d", s, len(req.Messages)) }
		switch {
		case task == "tour" && turn == 0:
			say("Let me count.")
			return &agent.Reply{Text: "Let me count.", Calls: calls(call(id("c1"), "count", `{}`), call(id("c2"), "broken", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "tour" && turn == 1:
			return &agent.Reply{Calls: calls(call(id("c3"), "flaky", `{}`), call(id("c4"), "write_note", `{"text":"hi"}`)), Finish: agent.FinishToolCalls}, nil
		case task == "note" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("n1"), "write_note", `{"text":"a"}`), call(id("n2"), "write_note", `{"text":"b"}`)), Finish: agent.FinishToolCalls}, nil
		case task == "groups" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("r"), "reset_tools", `{"extras":true}`)), Finish: agent.FinishToolCalls}, nil
		case task == "groups" && turn == 1:
			return &agent.Reply{Calls: calls(call(id("x"), "extra", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "skill" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("s"), skills.LoadTool, `{"skillId":"tips","path":"SKILL.md"}`)), Finish: agent.FinishToolCalls}, nil
		case task == "big" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("big"), "big", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "cut":
			say("The three causes are: first, the")
			return &agent.Reply{Text: "The three causes are: first, the", Finish: agent.FinishLength}, nil
		case task == "bigwait" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("big"), "big", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "bigwait" && turn == 1:
			return &agent.Reply{Calls: calls(call(id("g"), "gate", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "both" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("b1"), "count", `{}`), call(id("b2"), "ask", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "two" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("a1"), "ask", `{}`), call(id("a2"), "ask", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "retry" && turn == 0:
			mu.Lock()
			attempts[len(req.Messages)]++
			n := attempts[len(req.Messages)]
			mu.Unlock()
			if n == 1 {
				say("Oops ")
				return nil, &agent.APIError{Provider: "test", StatusCode: 503, Message: "overloaded", Retryable: true}
			}
		case task == "slow" && turn == 0:
			return &agent.Reply{Calls: calls(call(id("s1"), "write_note", `{"text":"s"}`)), Finish: agent.FinishToolCalls}, nil
		case task == "slow" && turn == 1:
			say("Now the gate.")
			return &agent.Reply{Text: "Now the gate.", Calls: calls(call(id("s2"), "gate", `{}`)), Finish: agent.FinishToolCalls}, nil
		case task == "gate" && turn == 0:
			say("Waiting.")
			return &agent.Reply{Text: "Waiting.", Calls: calls(call(id("g"), "gate", `{}`)), Finish: agent.FinishToolCalls}, nil
		case turn > 0:
			say("Done.")
			return &agent.Reply{Text: "Done.", Finish: agent.FinishStop}, nil
		}
		say("Hello.")
		return &agent.Reply{Text: "Hello.", Finish: agent.FinishStop}, nil
	})
}

func call(id, name, args string) toolkit.Call {
	return toolkit.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// Node returns the node binary and the clients/ui folder for the
// real-client tests, skipping when they are missing, unless
// TOOLSTREAM_UI_PEERS is set (CI), where missing clients are a failure.
func Node(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "ui"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(what string) {
		if os.Getenv("TOOLSTREAM_UI_PEERS") != "" {
			t.Fatalf("TOOLSTREAM_UI_PEERS is set but %s", what)
		}
		t.Skipf("skipping the real-client test: %s (run `npm ci` in clients/ui; TOOLSTREAM_UI_PEERS=1 makes this a failure)", what)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	for _, pkg := range []string{"@ag-ui/client", "ai"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing("clients/ui/node_modules has no " + pkg)
		}
	}
	return node, dir
}

// RunNode runs a script of clients/ui with args and fails the test with
// its output when it fails; it returns the script's output.
func RunNode(t *testing.T, script string, args ...string) string {
	t.Helper()
	node, dir := Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("%s:\n%s", script, stdout.Bytes())
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.Bytes())
	}
	if !strings.Contains(stdout.String(), "all checks passed") {
		t.Fatalf("%s did not finish its checks\n%s", script, stderr.Bytes())
	}
	return stdout.String()
}

// BigJSON is big's result: a JSON value of 1.5 MiB, more than the
// embedded server's 1 MiB message limit, so that NATS carries it in chunks.
func BigJSON() json.RawMessage {
	return json.RawMessage(`{"rows":"` + strings.Repeat("x", 3<<19) + `"}`)
}

// WaitPaused waits until thread id waits for n approvals (a call that
// asks after the run paused comes in a response of its own) and returns
// their call ids.
func (a *Agent) WaitPaused(t testing.TB, id string, n int) []string {
	t.Helper()
	th := a.Threads.Lookup(id)
	if th == nil {
		t.Fatalf("no thread %q", id)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p := th.Paused(); len(p) == n {
			ids := make([]string, n)
			for i, r := range p {
				ids[i] = r.CallID
			}
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %q does not wait for %d approvals: %v", id, n, th.Paused())
		}
		time.Sleep(time.Millisecond)
	}
}

// SmallBuffers serves h on loopback with small socket send buffers, and
// reports each return of h on the channel: a client that stops reading
// blocks the handler's writes soon (with StuckClient).
func SmallBuffers(t testing.TB, h http.Handler) (addr string, returned <-chan struct{}) {
	t.Helper()
	ret := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { ret <- struct{}{} }()
		h.ServeHTTP(w, r)
	}))
	srv.Listener = smallListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), ret
}

type smallListener struct{ net.Listener }

func (l smallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// StuckClient sends a request (method, path, JSON body) over a raw TCP
// connection with a small receive buffer and never reads the answer: a
// client that connects and then stops reading, its connection open. The
// connection is closed when the test ends.
func StuckClient(t testing.TB, addr, method, path string, body []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n",
		method, path, addr, len(body))
	if _, err := c.Write(append([]byte(req), body...)); err != nil {
		t.Fatal(err)
	}
}

// SlowClient sends a request (method, path, JSON body) over a raw TCP
// connection with a small receive buffer (128 KiB) and reads the answer slowly but
// steadily, at about rate bytes a second (a 32 KiB piece takes 32 ms at
// 1 MiB/s). It returns the response, whose body reads at that pace; the
// connection is closed when the test ends.
func SlowClient(t testing.TB, addr, method, path string, body []byte, rate int) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// Small, but more than a loopback segment (64 KiB): a receive buffer
	// smaller than that stalls the sender on TCP's persist timer (a
	// client that pauses, not a steady one).
	_ = c.(*net.TCPConn).SetReadBuffer(128 << 10)
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n",
		method, path, addr, len(body))
	if _, err := c.Write(append([]byte(req), body...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(&slowReader{r: c, rate: rate, start: time.Now()}, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// slowReader reads r at about rate bytes a second: before each read it
// waits until the bytes read so far are due, and it reads at most 4 KiB.
type slowReader struct {
	r     io.Reader
	rate  int
	start time.Time
	n     int
}

func (s *slowReader) Read(p []byte) (int, error) {
	due := s.start.Add(time.Duration(float64(s.n) / float64(s.rate) * float64(time.Second)))
	time.Sleep(time.Until(due)) // pacing, not synchronisation
	n, err := s.r.Read(p[:min(len(p), 4096)])
	s.n += n
	return n, err
}

// SendAs sends a JSON request as a user (a bearer token naming them, as
// Policy reads it; none for ""), and returns the status and the body.
func SendAs(t testing.TB, user, method, url string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
