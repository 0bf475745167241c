package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
)

// demoBinDir holds the binary buildDemo built, if it did; TestMain removes
// it after the tests (a 125 MB directory per run otherwise stays in the
// system's temporary directory).
var demoBinDir string

// buildDemo compiles the demo binary once per test run.
var buildDemo = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "toolstream-demo-bin-")
	if err != nil {
		return "", err
	}
	demoBinDir = dir
	bin := filepath.Join(dir, "demo")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// startServer runs a NATS server with JetStream: the "shared" server of a
// deployment, separate from the demo's process.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}

// collector keeps every event a subscriber received, in arrival order.
type collector struct {
	mu   sync.Mutex
	evs  []*events.Event
	bad  []string
	news chan struct{}
}

func (c *collector) handle(m *nats.Msg) {
	ev := new(events.Event)
	err := json.Unmarshal(m.Data, ev)
	c.mu.Lock()
	if err != nil {
		c.bad = append(c.bad, fmt.Sprintf("%s: %v", m.Subject, err))
	} else {
		c.evs = append(c.evs, ev)
	}
	c.mu.Unlock()
	select {
	case c.news <- struct{}{}:
	default:
	}
}

// waitFor waits until some event matches.
func (c *collector) waitFor(t *testing.T, what string, match func(*events.Event) bool) *events.Event {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		c.mu.Lock()
		for _, ev := range c.evs {
			if match(ev) {
				c.mu.Unlock()
				return ev
			}
		}
		c.mu.Unlock()
		select {
		case <-c.news:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no event: %s", what)
		}
	}
}

func (c *collector) snapshot() []*events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*events.Event(nil), c.evs...)
}

// demoAndCollector builds the demo and starts a NATS server for it, with a
// collector subscribed to subject there before the demo runs.
func demoAndCollector(t *testing.T, subject string) (bin, url string, col *collector) {
	t.Helper()
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	url = startServer(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	col = &collector{news: make(chan struct{}, 1)}
	if _, err := nc.Subscribe(subject, col.handle); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return bin, url, col
}

// TestDemoBinaryEndToEnd runs the compiled demo against a NATS server of
// its own, with a separate subscriber, answers the approval through the
// page's API, and checks from the events alone that every capability the
// scripted model exercises really happened.
func TestDemoBinaryEndToEnd(t *testing.T) {
	testutil.Long(t)
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	bin, url, col := demoAndCollector(t, "toolstream.e2e.>")

	web := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-nats", url, "-session", "e2e", "-dir", "../..",
		"-speed", "4", "-listen", web, "-approve", "page", "-once")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The approval, answered as the page would: with edited arguments.
	col.waitFor(t, "approval request for call_6", func(ev *events.Event) bool {
		return ev.Type == "approval" && strings.Contains(string(ev.Data), `"status":"pending"`) && strings.Contains(string(ev.Data), `"call":"call_6"`)
	})
	post := func(body string, origin string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+web+"/api/approve", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post(`{"session":"e2e","call":"call_6","approve":true}`, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin approval: %d %s", code, body)
	}
	if code, body := post(`{"session":"e2e","call":"call_6","approve":true,"args":[1]}`, ""); code != http.StatusBadRequest || !strings.Contains(body, "JSON object") {
		t.Errorf("args not an object: %d %s", code, body)
	}
	if code, body := post(`{"session":"e2e","call":"nope","approve":true}`, ""); code != http.StatusConflict || !strings.Contains(body, "no call waits") {
		t.Errorf("unknown call: %d %s", code, body)
	}
	edited := `{"title":"e2e-note","text":"approved from the page; write to ops@example.com"}`
	if code, body := post(`{"session":"e2e","call":"call_6","approve":true,"args":`+edited+`}`, "http://"+web); code != http.StatusOK {
		t.Fatalf("approval: %d %s", code, body)
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("demo exited with %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("demo did not finish\nstdout:\n%s", stdout.String())
	}
	col.waitFor(t, "answer event", func(ev *events.Event) bool { return ev.Type == agent.EventAnswer })
	out := stdout.String()
	for _, want := range []string{"=== Summary: 6 turns, 13 calls", "states: 1 interrupted, 10 success, 2 error", "approved call_6   by the web page"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	checkCapabilities(t, col.snapshot())
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.bad) > 0 {
		t.Errorf("undecodable events: %v", col.bad)
	}
}

// checkCapabilities asserts, from a session's events alone, that the
// scripted run did everything it claims.
func checkCapabilities(t *testing.T, evs []*events.Event) {
	t.Helper()
	byCall := map[string][]*events.Event{}
	pos := map[string]int{} // "call_1/start" -> arrival index
	var session []*events.Event
	for i, ev := range evs {
		if ev.Call == "" {
			session = append(session, ev)
			continue
		}
		byCall[ev.Call] = append(byCall[ev.Call], ev)
		if _, ok := pos[ev.Call+"/"+string(ev.Type)]; !ok {
			pos[ev.Call+"/"+string(ev.Type)] = i
		}
	}
	result := func(id string) *events.Result {
		list := byCall[id]
		if len(list) == 0 || list[len(list)-1].Type != events.TypeResult {
			t.Fatalf("%s has no result event", id)
		}
		return list[len(list)-1].Result
	}

	// Every call: gap-free sequence, and its deltas add up to its result.
	for id, list := range byCall {
		var rebuilt events.Reassembler
		for i, ev := range list {
			if ev.Seq != uint64(i+1) {
				t.Errorf("%s: event %d has seq %d", id, i, ev.Seq)
			}
			if err := rebuilt.Add(ev); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
		if r := result(id); events.ContentText(rebuilt.Content()) != events.ContentText(r.Content) {
			t.Errorf("%s: deltas add up to %q, the result is %q", id, events.ContentText(rebuilt.Content()), events.ContentText(r.Content))
		}
	}

	// Parallel: the read-only calls ran at the same time (on a loaded
	// machine one may finish before another's goroutine starts, so the
	// check is that at least two overlapped).
	running, most := 0, 0
	for _, ev := range evs {
		if ev.Call != "call_1" && ev.Call != "call_2" && ev.Call != "call_3" {
			continue
		}
		switch ev.Type {
		case events.TypeStart:
			running++
			most = max(most, running)
		case events.TypeResult:
			running--
		}
	}
	if most < 2 {
		t.Errorf("call_1..3 never ran at the same time")
	}
	// Serial: write_note started after every call before it had finished.
	for _, id := range []string{"call_1", "call_2", "call_3", "call_4", "call_5"} {
		if pos[id+"/result"] > pos["call_6/start"] {
			t.Errorf("write_note started before %s finished", id)
		}
	}
	// reset_tools and the skill: session events say who switched what on.
	var sawModel, sawSkill, sawLoad bool
	turns := 0
	argsOf := map[string]string{}
	var cuts []agent.ContextCut
	for _, ev := range session {
		d := string(ev.Data)
		switch ev.Type {
		case "groups":
			sawModel = sawModel || strings.Contains(d, `"activated":["notes"]`) && strings.Contains(d, `"by":"model"`)
			sawSkill = sawSkill || strings.Contains(d, `"activated":["files"]`) && strings.Contains(d, `"by":"skill"`)
		case "skills":
			sawLoad = sawLoad || strings.Contains(d, `"skill":"file-analysis"`)
		case agent.EventTurnEnd:
			turns++
		case agent.EventContextCut:
			var c agent.ContextCut
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				t.Fatal(err)
			}
			cuts = append(cuts, c)
		case agent.EventArgs:
			var d agent.ArgsDelta
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			argsOf[d.Call] += d.Delta
		}
	}
	// The model's arguments streamed before the calls: call_1's add up to
	// what the script wrote.
	if argsOf["call_1"] != `{"dir":"."}` {
		t.Errorf("call_1's argument deltas add up to %q", argsOf["call_1"])
	}
	if !sawModel || !sawSkill || !sawLoad {
		t.Errorf("group/skill events: reset_tools %v, skill activation %v, skill load %v", sawModel, sawSkill, sawLoad)
	}
	if turns != 6 {
		t.Errorf("%d turn events, want 6", turns)
	}
	// The context policy: the answer's request leaves turn 1 out, with a
	// summary in its place; the conversation keeps it (the run went on).
	if len(cuts) != 1 || cuts[0].Turn != 6 || fmt.Sprint(cuts[0].DroppedCalls) != "[call_q call_0]" || cuts[0].Dropped != 3 || cuts[0].Summarized != 3 {
		t.Errorf("context_cut events %+v, want one at turn 6 leaving out turn 1 (3 messages, summarized)", cuts)
	}
	// Mistakes the model can act on.
	if r := result("call_4"); r.State != "error" || !strings.Contains(events.ContentText(r.Content), `did you mean "count_lines"`) {
		t.Errorf("unknown tool: %s %q", r.State, events.ContentText(r.Content))
	}
	if r := result("call_5"); r.State != "error" || !strings.Contains(events.ContentText(r.Content), "query: is required") {
		t.Errorf("invalid arguments: %s %q", r.State, events.ContentText(r.Content))
	}
	// The approval: pending, then approved with edited arguments; the note
	// written under the edited title, its e-mail address redacted.
	var statuses []string
	for _, ev := range byCall["call_6"] { // approval events belong to their call
		if ev.Type == "approval" {
			var req struct{ Status string }
			_ = json.Unmarshal(ev.Data, &req)
			statuses = append(statuses, req.Status)
		}
	}
	if !reflect.DeepEqual(statuses, []string{"pending", "approved"}) {
		t.Errorf("approval statuses %v", statuses)
	}
	note := events.ContentText(result("call_6").Content)
	if result("call_6").State != "success" || !strings.Contains(note, "e2e-note") || strings.Contains(note, "ops@example.com") || !strings.Contains(note, "[redacted email]") {
		t.Errorf("write_note: %s %q", result("call_6").State, note)
	}
	// Retry: folder_stats failed twice (its progress says so) and the
	// third attempt answered.
	failed := 0
	for _, ev := range byCall["call_7"] {
		if ev.Type == events.TypeProgress && strings.Contains(ev.Progress.Message, "did not answer") {
			failed++
		}
	}
	if r := result("call_7"); failed != 2 || r.State != "success" || !strings.Contains(events.ContentText(r.Content), "answered on attempt 3") {
		t.Errorf("folder_stats: %d failed attempts, %s %q", failed, r.State, events.ContentText(r.Content))
	}
	// Eviction: the inventory was stored; the model got the location, and
	// the stored file holds all of it.
	inv := events.ContentText(result("call_8").Content)
	m := regexp.MustCompile(`saved in full to (\S+\.txt)`).FindStringSubmatch(inv)
	if m == nil {
		t.Fatalf("file_inventory was not evicted: %q", inv)
	}
	if stored, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(stored), "cmd/demo/main.go") {
		t.Errorf("the stored inventory is missing or incomplete: %v", err)
	}
	// External: ask_user suspended and was answered from outside.
	suspended := false
	for _, ev := range byCall["call_9"] {
		suspended = suspended || ev.Type == events.TypeSuspend && ev.Suspend.Reason == "external"
	}
	if !suspended {
		t.Error("ask_user did not suspend for an external answer")
	}
	if r := result("call_9"); r.State != "success" || !strings.Contains(events.ContentText(r.Content), "through NATS") {
		t.Errorf("ask_user: %s %q", r.State, events.ContentText(r.Content))
	}
	// Cancelled: watch_folder ran, reported progress, and was interrupted.
	if r := result("call_10"); r.State != "interrupted" {
		t.Errorf("watch_folder: %s", r.State)
	}
	if pos["call_10/progress"] == 0 {
		t.Error("watch_folder reported no progress before it was stopped")
	}
}
