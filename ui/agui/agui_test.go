package agui_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/internal/thread"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

type ev = map[string]any

// serve starts the handler on the test agent.
func serve(t *testing.T) (*uitest.Agent, string) {
	t.Helper()
	a := uitest.New(t)
	srv := httptest.NewServer(agui.NewHandler(a.Host))
	t.Cleanup(srv.Close)
	return a, srv.URL
}

// run posts a RunAgentInput and reads the whole stream, checking it with
// the rules of @ag-ui/client's verifier.
func run(t *testing.T, url string, in map[string]any) []ev {
	t.Helper()
	body, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	return parse(t, resp.Body)
}

// parse reads a run's frames from body and checks them with the rules of
// @ag-ui/client's verifier.
func parse(t *testing.T, body io.Reader) []ev {
	t.Helper()
	var out []ev
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not a data line: %q", line)
		}
		var e ev
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("frame %.200q (%d bytes): %v", data, len(data), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the stream after %d events: %v", len(out), err)
	}
	if err := verify(out); err != nil {
		t.Fatalf("%v\n%s", err, dump(out))
	}
	return out
}

// verify holds a run to the ordering rules of the official client's
// verifier: RUN_STARTED first, nothing after RUN_FINISHED or RUN_ERROR,
// ARGS and END only for a started call, no START of an open call, and no
// RUN_FINISHED while a text message, a tool call or a step is open.
func verify(evs []ev) error {
	text, calls, steps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, e := range evs {
		typ, _ := e["type"].(string)
		if i == 0 && typ != "RUN_STARTED" {
			return fmt.Errorf("first event %s, not RUN_STARTED", typ)
		}
		if i > 0 {
			if prev := evs[i-1]["type"]; prev == "RUN_FINISHED" || prev == "RUN_ERROR" {
				return fmt.Errorf("event %d (%s) after %s", i, typ, prev)
			}
		}
		id, _ := e["toolCallId"].(string)
		msg, _ := e["messageId"].(string)
		step, _ := e["stepName"].(string)
		switch typ {
		case "RUN_STARTED":
			if i != 0 {
				return fmt.Errorf("RUN_STARTED at %d", i)
			}
		case "TEXT_MESSAGE_START":
			if text[msg] {
				return fmt.Errorf("text message %s started twice", msg)
			}
			text[msg] = true
		case "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END":
			if !text[msg] {
				return fmt.Errorf("%s of text message %s not started", typ, msg)
			}
			if typ == "TEXT_MESSAGE_END" {
				delete(text, msg)
			}
		case "TOOL_CALL_START":
			if calls[id] {
				return fmt.Errorf("tool call %s started while open", id)
			}
			calls[id] = true
		case "TOOL_CALL_ARGS", "TOOL_CALL_END":
			if !calls[id] {
				return fmt.Errorf("%s of tool call %s not open", typ, id)
			}
			if typ == "TOOL_CALL_END" {
				delete(calls, id)
			}
		case "STEP_STARTED":
			if steps[step] {
				return fmt.Errorf("step %q started twice", step)
			}
			steps[step] = true
		case "STEP_FINISHED":
			if !steps[step] {
				return fmt.Errorf("step %q finished, not started", step)
			}
			delete(steps, step)
		case "RUN_FINISHED":
			if len(text)+len(calls)+len(steps) > 0 {
				return fmt.Errorf("RUN_FINISHED with open text %v, calls %v, steps %v", text, calls, steps)
			}
		}
	}
	if n := len(evs); n == 0 || (evs[n-1]["type"] != "RUN_FINISHED" && evs[n-1]["type"] != "RUN_ERROR") {
		return fmt.Errorf("the stream does not end with RUN_FINISHED or RUN_ERROR")
	}
	return nil
}

func dump(evs []ev) string {
	var b strings.Builder
	for _, e := range evs {
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func input(thread, runID string, msgs ...map[string]any) map[string]any {
	if msgs == nil {
		msgs = []map[string]any{}
	}
	return map[string]any{"threadId": thread, "runId": runID, "messages": msgs, "tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}}
}

func user(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

// of returns the events of a type.
func of(evs []ev, typ string) []ev {
	var out []ev
	for _, e := range evs {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

func text(evs []ev) string {
	var b strings.Builder
	for _, e := range of(evs, "TEXT_MESSAGE_CONTENT") {
		b.WriteString(e["delta"].(string))
	}
	return b.String()
}

func results(evs []ev) map[string]string {
	out := map[string]string{}
	for _, e := range of(evs, "TOOL_CALL_RESULT") {
		out[e["toolCallId"].(string)] = e["content"].(string)
	}
	return out
}

func TestTourWithApproval(t *testing.T) {
	_, url := serve(t)
	first := run(t, url, input("t1", "run-1", user("u1", "tour")))
	if got := text(first); got != "Let me count." {
		t.Errorf("text %q", got)
	}
	res := results(first)
	if res["c1_1"] != "one two three" {
		t.Errorf("count's result %q", res["c1_1"])
	}
	if !strings.Contains(res["c2_1"], "the disk is on fire") {
		t.Errorf("broken's result %q", res["c2_1"])
	}
	if res["c3_4"] != "final" {
		t.Errorf("flaky's result %q", res["c3_4"])
	}
	if _, ok := res["c4_4"]; ok {
		t.Errorf("write_note has a result before its approval")
	}
	// Arguments stream as the model writes them: two pieces per call.
	args := map[string]string{}
	for _, e := range of(first, "TOOL_CALL_ARGS") {
		args[e["toolCallId"].(string)] += e["delta"].(string)
	}
	if args["c4_4"] != `{"text":"hi"}` || len(of(first, "TOOL_CALL_ARGS")) != 8 {
		t.Errorf("arguments %v in %d pieces", args, len(of(first, "TOOL_CALL_ARGS")))
	}
	// Progress and deltas are activity; flaky's reset is a snapshot.
	var progress, resets int
	for _, e := range of(first, "ACTIVITY_DELTA") {
		for _, op := range e["patch"].([]any) {
			if op.(map[string]any)["path"] == "/progress" {
				progress++
			}
		}
	}
	for _, e := range of(first, "ACTIVITY_SNAPSHOT") {
		if c := e["content"].(map[string]any); c["tool"] == "flaky" {
			resets++ // its start, then its reset
		}
	}
	if progress != 3 || resets != 2 {
		t.Errorf("%d progress patches, %d reset snapshots\n%s", progress, resets, dump(first))
	}
	// A result's patch sets /error for a failure only: an empty error
	// field said nothing, and a client reading its presence saw a failure.
	errs := map[string]any{}
	for _, e := range of(first, "ACTIVITY_DELTA") {
		for _, op := range e["patch"].([]any) {
			if op := op.(map[string]any); op["path"] == "/error" {
				errs[strings.TrimPrefix(e["messageId"].(string), "activity-")] = op["value"]
			}
		}
	}
	if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs["c2_1"]), "the disk is on fire") {
		t.Errorf("/error patches: %v, want broken's (c2_1) only", errs)
	}
	if n := len(of(first, "STEP_STARTED")); n != 2 {
		t.Errorf("%d steps, want 2 (turns)", n)
	}
	last := first[len(first)-1]
	outcome := last["outcome"].(map[string]any)
	if last["type"] != "RUN_FINISHED" || outcome["type"] != "interrupt" {
		t.Fatalf("the run ends with %v", last)
	}
	ints := outcome["interrupts"].([]any)
	in := ints[0].(map[string]any)
	if len(ints) != 1 || in["id"] != "c4_4" || in["toolCallId"] != "c4_4" || in["reason"] != "tool_call" || in["expiresAt"] == nil {
		t.Fatalf("interrupts %v", ints)
	}

	// A run with nothing new hears of the pending interrupt again.
	again := run(t, url, input("t1", "run-1b", user("u1", "tour")))
	if o := again[len(again)-1]["outcome"].(map[string]any); o["type"] != "interrupt" || len(o["interrupts"].([]any)) != 1 || len(again) != 3 {
		t.Errorf("a run with nothing new:\n%s", dump(again))
	}

	resume := input("t1", "run-2", user("u1", "tour"))
	resume["resume"] = []any{map[string]any{"interruptId": "c4_4", "status": "resolved", "payload": map[string]any{"approved": true}}}
	second := run(t, url, resume)
	if got := results(second)["c4_4"]; got != "saved: hi" {
		t.Errorf("write_note's result %q\n%s", got, dump(second))
	}
	if got := text(second); got != "Done." {
		t.Errorf("text %q", got)
	}
	last = second[len(second)-1]
	if last["type"] != "RUN_FINISHED" || last["outcome"].(map[string]any)["type"] != "success" {
		t.Errorf("the run ends with %v", last)
	}
}

func TestRejectAndApproveInTurn(t *testing.T) {
	_, url := serve(t)
	first := run(t, url, input("t2", "r1", user("u1", "note")))
	ints := first[len(first)-1]["outcome"].(map[string]any)["interrupts"].([]any)
	if len(ints) != 1 || ints[0].(map[string]any)["id"] != "n1_1" {
		t.Fatalf("interrupts %v", ints)
	}
	// Cancelled: n1 is denied, then n2 asks in the same response.
	in := input("t2", "r2", user("u1", "note"))
	in["resume"] = []any{map[string]any{"interruptId": "n1_1", "status": "cancelled"}}
	second := run(t, url, in)
	if got := results(second)["n1_1"]; !strings.Contains(got, "rejected") {
		t.Errorf("n1's result %q", got)
	}
	ints = second[len(second)-1]["outcome"].(map[string]any)["interrupts"].([]any)
	if len(ints) != 1 || ints[0].(map[string]any)["id"] != "n2_1" {
		t.Fatalf("interrupts %v\n%s", ints, dump(second))
	}
	in = input("t2", "r3", user("u1", "note"))
	in["resume"] = []any{map[string]any{"interruptId": "n2_1", "status": "resolved", "payload": map[string]any{"approved": false, "reason": "not now"}}}
	third := run(t, url, in)
	if got := results(third)["n2_1"]; !strings.Contains(got, "not now") {
		t.Errorf("n2's result %q", got)
	}
	if text(third) != "Done." {
		t.Errorf("text %q", text(third))
	}
}

// A new message instead of an answer ends the paused run; the thread goes
// on with the new message.
func TestNewMessageWhilePaused(t *testing.T) {
	a, url := serve(t)
	first := run(t, url, input("t3", "r1", user("u1", "tour")))
	if first[len(first)-1]["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Fatal("not paused")
	}
	second := run(t, url, input("t3", "r2", user("u1", "tour"), user("u2", "hi")))
	if text(second) != "Hello." || second[len(second)-1]["type"] != "RUN_FINISHED" {
		t.Errorf("second run:\n%s", dump(second))
	}
	if p := a.Perms.Pending(""); len(p) != 0 {
		t.Errorf("approvals still pending: %v", p)
	}
}

func TestEmptyRun(t *testing.T) {
	_, url := serve(t)
	evs := run(t, url, input("t4", "r1"))
	if len(evs) != 3 || evs[1]["type"] != "STATE_SNAPSHOT" {
		t.Errorf("empty run:\n%s", dump(evs))
	}
}

func TestBadRequests(t *testing.T) {
	_, url := serve(t)
	for _, c := range []struct {
		method, body string
		status       int
		says         string
	}{
		{"GET", "", 405, "POST a RunAgentInput"},
		{"POST no type", `{"threadId":"t","runId":"r","messages":[]}`, 415, "no Content-Type"},
		{"POST text/plain", `{"threadId":"t","runId":"r","messages":[]}`, 415, `Content-Type "text/plain" is refused`},
		{"POST", `{`, 400, "not a RunAgentInput"},
		{"POST", `{"threadId":"t","messages":[]}`, 400, "threadId and runId are required"},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"robot"}]}`, 400, `unknown role "robot"`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"image"}]}]}`, 400, `"image" parts are not supported`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"},{"id":"u2","role":"user","content":null}]}`, 400, `messages[1] (user message "u2"): content is required`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"u3","role":"user"}]}`, 400, `messages[0] (user message "u3"): content is required`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"u4","role":"user","content":[null]}]}`, 400, `messages[0] (user message "u4"): content[0]: "" parts are not supported`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"u5","role":"user","content":[{"type":"text"}]}]}`, 400, `content[0]: a text part needs its text`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"u6","role":"user","content":{"type":"text","text":"hi"}}]}`, 400, `content must be a string or an array of parts`},
		{"POST", `{"threadId":"t","runId":"r","messages":[{"id":"u7","role":"user","content":"a"},{"id":"u7","role":"user","content":"b"}]}`, 400, `message id "u7" comes twice`},
		{"POST", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"x","status":"maybe"}]}`, 400, `status "maybe"`},
		{"POST", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"x","status":"resolved","payload":{"approved":true,"args":[1]}}]}`, 400, "args must be a JSON object"},
		{"POST", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"x","status":"resolved"}]}`, 409, "no call waits for approval"},
	} {
		method, ctype, _ := strings.Cut(c.method, " ")
		req, _ := http.NewRequest(method, url, strings.NewReader(c.body))
		switch {
		case ctype == "text/plain":
			req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		case method == "POST" && ctype == "":
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = json.Unmarshal(b, &body)
		if resp.StatusCode != c.status || !strings.Contains(body.Error, c.says) {
			t.Errorf("%s %s: %d %s, want %d saying %q", c.method, c.body, resp.StatusCode, b, c.status, c.says)
		}
	}
}

// A model retry: the first attempt's text message is closed, a CUSTOM
// event says why, and the retry streams under a new message id.
func TestModelRetry(t *testing.T) {
	_, url := serve(t)
	evs := run(t, url, input("t5", "r1", user("u1", "retry")))
	var retries int
	for _, e := range of(evs, "CUSTOM") {
		if e["name"] == "toolstream.model_retry" {
			retries++
		}
	}
	starts := of(evs, "TEXT_MESSAGE_START")
	if retries != 1 || len(starts) != 2 || starts[0]["messageId"] == starts[1]["messageId"] || text(evs) != "Oops Hello." {
		t.Errorf("%d retries, text %q:\n%s", retries, text(evs), dump(evs))
	}
}

// Tool groups are the shared state: a STATE_DELTA when reset_tools
// switches one on, and the snapshot of the next run has it.
func TestGroupsAsState(t *testing.T) {
	_, url := serve(t)
	evs := run(t, url, input("t6", "r1", user("u1", "groups")))
	deltas := of(evs, "STATE_DELTA")
	if len(deltas) != 1 || results(evs)["x_3"] != "extra!" {
		t.Fatalf("state deltas %v, results %v\n%s", deltas, results(evs), dump(evs))
	}
	op := deltas[0]["delta"].([]any)[0].(map[string]any)
	if op["op"] != "add" || op["path"] != "/groups" || fmt.Sprint(op["value"].(map[string]any)["active"]) != "[extras]" {
		t.Errorf("the patch %v", op)
	}
	next := run(t, url, input("t6", "r2", user("u1", "groups"), user("u2", "hi")))
	snap := of(next, "STATE_SNAPSHOT")[0]["snapshot"].(map[string]any)
	if fmt.Sprint(snap["groups"].(map[string]any)["active"]) != "[extras]" {
		t.Errorf("the next run's snapshot %v", snap)
	}
}

// A loaded skill reaches the state: a delta adding /skills (and the
// groups it switched on), and the next run's snapshot holds it.
func TestSkillsAsState(t *testing.T) {
	_, url := serve(t)
	evs := run(t, url, input("t9", "r1", user("u1", "skill")))
	var skills, groups map[string]any
	for _, d := range of(evs, "STATE_DELTA") {
		for _, op := range d["delta"].([]any) {
			op := op.(map[string]any)
			switch op["path"] {
			case "/skills":
				skills = op["value"].(map[string]any)
			case "/groups":
				groups = op["value"].(map[string]any)
			}
		}
	}
	if skills == nil || fmt.Sprint(skills["loaded"]) != "[tips]" || groups == nil || fmt.Sprint(groups["active"]) != "[extras]" {
		t.Fatalf("state deltas: skills %v, groups %v\n%s", skills, groups, dump(evs))
	}
	next := run(t, url, input("t9", "r2", user("u1", "skill"), user("u2", "hi")))
	snap := of(next, "STATE_SNAPSHOT")[0]["snapshot"].(map[string]any)
	if fmt.Sprint(snap["skills"].(map[string]any)["loaded"]) != "[tips]" {
		t.Errorf("the next run's snapshot %v", snap)
	}
}

// A resume that answers one interrupt twice is refused whole: nothing is
// decided, and the interrupt still waits for its answer.
func TestResumeAnswersOneInterruptTwice(t *testing.T) {
	a, url := serve(t)
	first := run(t, url, input("t10", "r1", user("u1", "tour")))
	if first[len(first)-1]["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Fatal("not paused")
	}
	in := input("t10", "r2", user("u1", "tour"))
	in["resume"] = []any{
		map[string]any{"interruptId": "c4_4", "status": "resolved", "payload": map[string]any{"approved": true}},
		map[string]any{"interruptId": "c4_4", "status": "cancelled"},
	}
	body, _ := json.Marshal(in)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "c4_4") {
		t.Errorf("status %d: %s, want 400 naming the call", resp.StatusCode, b)
	}
	if p := a.Perms.Pending(""); len(p) != 1 || p[0].CallID != "c4_4" {
		t.Fatalf("pending after the refused resume: %v", p)
	}
	again := run(t, url, input("t10", "r3", user("u1", "tour")))
	if o := again[len(again)-1]["outcome"].(map[string]any); o["type"] != "interrupt" {
		t.Errorf("the interrupt is not pending any more:\n%s", dump(again))
	}
}

// HttpAgent sends cancelled entries for the interrupts it holds with the
// user's next message. When the paused run already ended (its approvals
// timed out, or it was cancelled), the new message still starts a run:
// the stale entries are moot, as when they end a paused run.
func TestNewMessageAfterThePausedRunEnded(t *testing.T) {
	a, url := serve(t)
	first := run(t, url, input("t11", "r1", user("u1", "tour")))
	if first[len(first)-1]["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Fatal("not paused")
	}
	th := a.Threads.Lookup("t11")
	th.Cancel() // the paused run ends without its answer
	deadline := time.Now().Add(10 * time.Second)
	for th.Paused() != nil || th.Streaming() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled run does not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	in := input("t11", "r2", user("u1", "tour"), user("u2", "hi"))
	in["resume"] = []any{map[string]any{"interruptId": "c4_4", "status": "cancelled"}}
	second := run(t, url, in)
	if text(second) != "Hello." || second[len(second)-1]["type"] != "RUN_FINISHED" {
		t.Errorf("second run:\n%s", dump(second))
	}
}

// A host that is closed (the server shuts down) answers 503: the request
// was fine and may be tried again elsewhere or later.
func TestClosedHost(t *testing.T) {
	a, url := serve(t)
	a.Host.Close()
	body, _ := json.Marshal(input("t12", "r1", user("u1", "hi")))
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "closed") {
		t.Errorf("status %d: %s, want 503", resp.StatusCode, b)
	}
}

// A client that goes away cancels the run of the response it was
// reading, and no other: here its response ends (the gate opens) and
// another request starts a run (which pauses) before the handler gets to
// cancel. That run must still be paused after: the cancel used to land on
// whatever run the thread had then. The test plays the handler's first
// half (it finds its client gone, with the response it read) and drives the
// second, clientGone, once run B waits: no caller's code runs between them.
func TestClientGoneCancelsOnlyItsRun(t *testing.T) {
	a := uitest.New(t)
	srv := httptest.NewServer(agui.NewHandler(a.Host))
	t.Cleanup(srv.Close)

	// Run A waits in the gate: the response its client reads.
	body, _ := json.Marshal(input("t13", "A", user("u1", "gate")))
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run A: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"ACTIVITY_SNAPSHOT"`) && strings.Contains(sc.Text(), `"tool":"gate"`) {
			break
		}
	}
	th := a.Threads.Lookup("t13")
	logA := th.Streaming()
	if logA == nil {
		t.Fatal("run A does not stream")
	}

	// Meanwhile run A ends and run B starts, and pauses.
	close(a.Gate)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for th.Streaming() != nil {
		if time.Now().After(deadline) {
			t.Fatal("run A does not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b := run(t, srv.URL, input("t13", "B", user("u1", "gate"), user("u2", "note")))
	ints := b[len(b)-1]["outcome"].(map[string]any)["interrupts"].([]any)
	if len(ints) != 1 {
		t.Fatalf("run B: interrupts %v\n%s", ints, dump(b))
	}
	n1 := ints[0].(map[string]any)["id"].(string)

	// Now the handler of A cancels: run B must not mind.
	agui.ClientGoneForTest(th, logA)
	in := input("t13", "C", user("u1", "gate"), user("u2", "note"))
	in["resume"] = []any{map[string]any{"interruptId": n1, "status": "resolved", "payload": map[string]any{"approved": true}}}
	c := run(t, srv.URL, in)
	if got := results(c)[n1]; got != "saved: a" {
		t.Errorf("%s's result %q\n%s", n1, got, dump(c))
	}
	if last := c[len(c)-1]; last["type"] != "RUN_FINISHED" || last["outcome"].(map[string]any)["type"] != "interrupt" {
		t.Errorf("run B does not go on to its second approval:\n%s", dump(c))
	}
}

// HttpAgent sends the whole conversation with every run, the tool
// results toolstream sent included, which the handler does not read: a
// thread with a few large results (1.5 MiB each here, screenshots or
// files in life) is continued all the same. The body used to be read
// whole and refused past 4 MiB (413), so every later run of the thread
// was refused. What the handler keeps is still bounded (MaxBody).
func TestLongHistory(t *testing.T) {
	_, url := serve(t)
	big := strings.Repeat("x", 3<<19)
	msgs := []map[string]any{user("u1", "hi")}
	for i := range 4 {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			map[string]any{"id": "a" + id, "role": "assistant", "toolCalls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "big", "arguments": "{}"}}}},
			map[string]any{"id": "result-" + id, "role": "tool", "toolCallId": id, "content": big})
	}
	msgs = append(msgs, user("u2", "hi"))
	evs := run(t, url, input("t15", "r1", msgs...))
	if text(evs) != "Hello." {
		t.Fatalf("the run:\n%s", dump(evs))
	}

	// What the handler keeps is bounded: user messages past MaxBody are refused.
	body, _ := json.Marshal(input("t15", "r2", user("u3", strings.Repeat("y", agui.MaxBody))))
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "the handler keeps") {
		t.Errorf("a user message past MaxBody: %d %s", resp.StatusCode, b)
	}

	// The body as a whole is bounded too (here at 8 MiB, not MaxWire).
	agui.SetMaxWire(8 << 20)
	t.Cleanup(func() { agui.SetMaxWire(0) })
	huge := io.MultiReader(strings.NewReader(`{"threadId":"t15","runId":"r3","x":"`), io.LimitReader(zeros{}, 8<<20), strings.NewReader(`"}`))
	resp, err = http.Post(url, "application/json", huge)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "body limit") {
		t.Errorf("a body past MaxWire: %d %s", resp.StatusCode, b)
	}
}

// zeros reads as an endless run of '0'.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// Text message ids are the thread's own, not made of the client's runId:
// a client that sends one runId for every run (runId is the client's to
// choose) got the same message id in each run, and HttpAgent, which finds
// a message by id, appended the second run's words to the first run's
// message.
func TestMessageIDsUniqueWhateverTheRunID(t *testing.T) {
	_, url := serve(t)
	first := run(t, url, input("t16", "same", user("u1", "hi")))
	second := run(t, url, input("t16", "same", user("u1", "hi"), user("u2", "hi")))
	a, b := of(first, "TEXT_MESSAGE_START"), of(second, "TEXT_MESSAGE_START")
	if len(a) != 1 || len(b) != 1 || a[0]["messageId"] == b[0]["messageId"] {
		t.Fatalf("text messages %v and %v", a, b)
	}
}

// TestStuckClientDropped: a client that sends its run and then stops
// reading, its connection open (a raw TCP connection with small socket
// buffers, the run's frames larger than they hold: big's 1.5 MiB result),
// is dropped once a write has waited the host's write timeout, and
// treated as a client that went away: its run is cancelled. Before, the
// handler waited in the write for ever, holding its goroutine and the
// response (the test gave up after 10 s), and the run waited in the gate.
func TestStuckClientDropped(t *testing.T) {
	const bound = 200 * time.Millisecond
	a := uitest.New(t, ui.WithWriteTimeout(bound))
	addr, returned := uitest.SmallBuffers(t, agui.NewHandler(a.Host))
	body, _ := json.Marshal(input("t-stuck", "R1", user("u1", "bigwait")))
	start := time.Now()
	uitest.StuckClient(t, addr, http.MethodPost, "/", body)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatalf("the handler still writes to a client that does not read, %v after the request (write timeout %v)", time.Since(start), bound)
	}
	took := time.Since(start)
	if took > bound+3*time.Second {
		t.Errorf("the handler returned %v after the request, with a write timeout of %v", took, bound)
	}
	th := a.Threads.Lookup("t-stuck")
	l := th.Undelivered()
	if l == nil {
		t.Fatal("no response")
	}
	testutil.WaitFor(t, l.Done(), "the stuck client's run to be cancelled (it waits in the gate)")
	if e := l.End(); e.Kind != thread.EndError || e.Error == nil || !e.Error.Canceled {
		t.Fatalf("the run ended %+v, not cancelled", e)
	}
	t.Logf("handler returned %v after the request (write timeout %v)", took.Round(time.Millisecond), bound)
}

// TestSlowClientNotDropped: a client that reads slowly but steadily (a
// raw TCP connection with small socket buffers, taking 4 KiB every 4 ms,
// about 1 MiB/s) gets the whole of a large frame (big's 1.5 MiB result,
// some 1.5 s on the wire) although the host's write timeout (300 ms) is
// far shorter than the frame's transfer: the bound is on each 32 KiB
// piece (some 32 ms here), not on the frame (ui.WithWriteTimeout).
func TestSlowClientNotDropped(t *testing.T) {
	const bound = 500 * time.Millisecond
	a := uitest.New(t, ui.WithWriteTimeout(bound))
	addr, returned := uitest.SmallBuffers(t, agui.NewHandler(a.Host))
	body, _ := json.Marshal(input("t-slow", "R1", user("u1", "big")))
	start := time.Now()
	resp := uitest.SlowClient(t, addr, http.MethodPost, "/", body, 1<<20)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	evs := parse(t, resp.Body)
	took := time.Since(start)
	testutil.WaitFor(t, returned, "the handler to return")
	var got string
	for _, c := range results(evs) {
		got = c
	}
	if want := string(uitest.BigJSON()); got != want {
		t.Fatalf("the big result: %d bytes, want %d", len(got), len(want))
	}
	if last := evs[len(evs)-1]; last["type"] != "RUN_FINISHED" || text(evs) != "Done." {
		t.Fatalf("the run's end: %v, text %q", last, text(evs))
	}
	if took < 2*bound {
		t.Errorf("the stream took %v, not much longer than the write timeout %v: the test proves nothing", took, bound)
	}
	t.Logf("the slow client read the whole stream in %v (write timeout %v)", took.Round(time.Millisecond), bound)
}

// TestTruncatedAnswer: an answer the output token limit cut (the model's
// reply finished with FinishLength) ends the run with RUN_FINISHED whose
// result (the answer event's body) says "truncated": true; a whole
// answer's result does not have the field.
func TestTruncatedAnswer(t *testing.T) {
	_, url := serve(t)
	evs := run(t, url, input("t-cut", "R1", user("u1", "cut")))
	res, _ := evs[len(evs)-1]["result"].(map[string]any)
	if evs[len(evs)-1]["type"] != "RUN_FINISHED" || res["truncated"] != true || res["text"] != "The three causes are: first, the" {
		t.Errorf("the run's end: %v\n%s", evs[len(evs)-1], dump(evs))
	}
	evs = run(t, url, input("t-whole", "R1", user("u1", "hi")))
	if res, _ := evs[len(evs)-1]["result"].(map[string]any); res == nil || res["truncated"] != nil {
		t.Errorf("a whole answer's end: %v", evs[len(evs)-1])
	}
}
