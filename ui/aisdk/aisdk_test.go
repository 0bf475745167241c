package aisdk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/aisdk"
	"github.com/toolstream/toolstream/ui/internal/thread"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

type chunk = map[string]any

func serve(t *testing.T, opts ...func(*uitest.Agent) []aisdk.Option) (*uitest.Agent, string) {
	t.Helper()
	a := uitest.New(t)
	var o []aisdk.Option
	for _, f := range opts {
		o = append(o, f(a)...)
	}
	h := aisdk.NewHandler(a.Host, o...)
	mux := http.NewServeMux()
	mux.Handle("POST /api/chat", h)
	mux.Handle("GET /api/chat/{id}/stream", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return a, srv.URL
}

func withReplay(a *uitest.Agent) []aisdk.Option { return []aisdk.Option{aisdk.WithReplay(a.Bus)} }

// stream reads a UI message stream: its chunks, checked to end with
// [DONE] after a finish.
type stream struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
	got  []chunk
	done bool
}

func open(t *testing.T, resp *http.Response) *stream {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if resp.Header.Get("X-Vercel-AI-UI-Message-Stream") != "v1" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("headers %v", resp.Header)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	t.Cleanup(func() { resp.Body.Close() })
	return &stream{t: t, resp: resp, sc: sc}
}

// next returns the next chunk, or nil after [DONE].
func (s *stream) next() chunk {
	s.t.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			s.t.Fatalf("not a data line: %q", line)
		}
		if data == "[DONE]" {
			s.done = true
			for s.sc.Scan() {
				if s.sc.Text() != "" {
					s.t.Fatalf("%q after [DONE]", s.sc.Text())
				}
			}
			return nil
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			s.t.Fatalf("%.200q (%d bytes): %v", data, len(data), err)
		}
		s.got = append(s.got, c)
		return c
	}
	s.t.Fatalf("the stream ended without [DONE] after %d chunks: %v", len(s.got), s.sc.Err())
	return nil
}

func (s *stream) all() []chunk {
	s.t.Helper()
	for s.next() != nil {
	}
	if n := len(s.got); n == 0 || s.got[0]["type"] != "start" || s.got[n-1]["type"] != "finish" {
		s.t.Fatalf("want start ... finish:\n%s", dump(s.got))
	}
	return s.got
}

func post(t *testing.T, url string, body any) *stream {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+"/api/chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return open(t, resp)
}

// untilToolAsked reads s until its gated tool is asked to run.
func (s *stream) untilToolAsked() {
	for c := s.next(); c["type"] != "tool-input-available"; c = s.next() {
	}
}

// resumeAtTheGate resumes chat id (GET <api>/<id>/stream) while live, its
// response in progress, waits at the gated tool; it opens the gate once the
// resume is under way and returns both streams whole.
func resumeAtTheGate(t *testing.T, a *uitest.Agent, url, id string, live *stream) (l, r []chunk) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second} // a resume that hangs fails
	resp, err := client.Get(url + "/api/chat/" + id + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	resumed := open(t, resp)
	resumed.next() // the resume is under way before the gate opens
	close(a.Gate)
	return live.all(), resumed.all()
}

func dump(cs []chunk) string {
	var b strings.Builder
	for _, c := range cs {
		j, _ := json.Marshal(c)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func userMsg(id, text string) chunk {
	return chunk{"id": id, "role": "user", "parts": []any{chunk{"type": "text", "text": text}}}
}

// tool is what a UI shows of one tool part at the end of a stream: its
// state, its output and the preliminary outputs it showed.
type tool struct {
	state, errorText string
	output           any
	preliminary      []any
}

func tools(cs []chunk) map[string]*tool {
	out := map[string]*tool{}
	for _, c := range cs {
		id, _ := c["toolCallId"].(string)
		if id == "" {
			continue
		}
		tl := out[id]
		if tl == nil {
			tl = &tool{}
			out[id] = tl
		}
		switch c["type"] {
		case "tool-input-start", "tool-input-delta":
			tl.state = "input-streaming"
		case "tool-input-available":
			tl.state = "input-available"
		case "tool-approval-request":
			tl.state = "approval-requested"
		case "tool-output-available":
			tl.state, tl.output = "output-available", c["output"]
			if c["preliminary"] == true {
				tl.preliminary = append(tl.preliminary, c["output"])
				tl.state = "preliminary"
			}
		case "tool-output-error":
			tl.state, tl.errorText = "output-error", c["errorText"].(string)
		case "tool-output-denied":
			tl.state = "output-denied"
		}
	}
	return out
}

func text(cs []chunk) string {
	var b strings.Builder
	for _, c := range cs {
		if c["type"] == "text-delta" {
			b.WriteString(c["delta"].(string))
		}
	}
	return b.String()
}

func last(cs []chunk, typ string) chunk {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i]["type"] == typ {
			return cs[i]
		}
	}
	return nil
}

func TestTourWithApproval(t *testing.T) {
	_, url := serve(t)
	first := post(t, url, chunk{"id": "chat1", "trigger": "submit-message", "messages": []any{userMsg("u1", "tour")}}).all()
	if text(first) != "Let me count." {
		t.Errorf("text %q", text(first))
	}
	tl := tools(first)
	want := map[string]tool{
		"c1_1": {state: "output-available", output: "one two three", preliminary: []any{"one ", "one two ", "one two three"}},
		"c2_1": {state: "output-error", errorText: "the disk is on fire"}, // its only output was the error line
		"c3_4": {state: "output-available", output: "final", preliminary: []any{"draft", "", "final"}},
		"c4_4": {state: "approval-requested"},
	}
	for id, w := range want {
		if got := tl[id]; got == nil || !reflect.DeepEqual(*got, w) {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
	}
	if f := last(first, "finish"); f["finishReason"] != "tool-calls" {
		t.Errorf("finish %v", f)
	}
	var progress int
	for _, c := range first {
		if c["type"] == "data-toolstream-progress" && c["transient"] == true {
			progress++
		}
	}
	if progress != 3 {
		t.Errorf("%d progress parts", progress)
	}
	msgID := first[0]["messageId"]

	assistant := chunk{"id": msgID, "role": "assistant", "parts": []any{
		chunk{"type": "dynamic-tool", "toolName": "write_note", "toolCallId": "c4_4", "state": "approval-responded",
			"input": chunk{"text": "hi"}, "approval": chunk{"id": "c4_4", "approved": true}},
	}}
	second := post(t, url, chunk{"id": "chat1", "trigger": "submit-message", "messages": []any{userMsg("u1", "tour"), assistant}}).all()
	if second[0]["messageId"] != msgID {
		t.Errorf("the continuation is message %v, not %v", second[0]["messageId"], msgID)
	}
	if got := tools(second)["c4_4"]; got == nil || got.output != "saved: hi" {
		t.Errorf("write_note: %+v\n%s", got, dump(second))
	}
	if text(second) != "Done." || last(second, "finish")["finishReason"] != "stop" {
		t.Errorf("second response:\n%s", dump(second))
	}
}

func TestDenial(t *testing.T) {
	_, url := serve(t)
	first := post(t, url, chunk{"id": "chat2", "messages": []any{userMsg("u1", "note")}}).all()
	if tools(first)["n1_1"].state != "approval-requested" {
		t.Fatalf("n1: %+v", tools(first)["n1_1"])
	}
	assistant := chunk{"id": first[0]["messageId"], "role": "assistant", "parts": []any{
		chunk{"type": "dynamic-tool", "toolName": "write_note", "toolCallId": "n1_1", "state": "approval-responded",
			"approval": chunk{"id": "n1_1", "approved": false, "reason": "no"}},
	}}
	second := post(t, url, chunk{"id": "chat2", "messages": []any{userMsg("u1", "note"), assistant}}).all()
	tl := tools(second)
	if tl["n1_1"].state != "output-denied" || tl["n2_1"].state != "approval-requested" {
		t.Errorf("n1 %+v, n2 %+v\n%s", tl["n1_1"], tl["n2_1"], dump(second))
	}
}

// A reload resumes the response in progress: the resumed stream is the
// live one from its start, read back from the durable stream (or from
// memory without it).
func TestResume(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []func(*uitest.Agent) []aisdk.Option
	}{{"durable stream", []func(*uitest.Agent) []aisdk.Option{withReplay}}, {"memory", nil}} {
		t.Run(c.name, func(t *testing.T) {
			a, url := serve(t, c.opts...)
			resp, err := http.Get(url + "/api/chat/chat3/stream")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("resume of an unknown chat: %d", resp.StatusCode)
			}
			live := post(t, url, chunk{"id": "chat3", "messages": []any{userMsg("u1", "gate")}})
			live.untilToolAsked()
			l, r := resumeAtTheGate(t, a, url, "chat3", live)
			if !reflect.DeepEqual(l, r) {
				t.Errorf("live:\n%s\nresumed:\n%s", dump(l), dump(r))
			}
			if tools(r)["g_1"].output != "opened" || text(r) != "Waiting.Done." {
				t.Errorf("resumed:\n%s", dump(r))
			}
			resp, err = http.Get(url + "/api/chat/chat3/stream")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Errorf("resume after the end: %d", resp.StatusCode)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	_, url := serve(t)
	for _, c := range []struct {
		body   string
		status int
		says   string
	}{
		{`{`, 400, "not a useChat request"},
		{`{"messages":[]}`, 400, "chat id (id) is required"},
		{`{"id":"x","trigger":"regenerate-message","messages":[]}`, 400, "regenerate-message is not supported"},
		{`{"id":"x","messages":[{"id":"m","role":"robot","parts":[]}]}`, 400, `unknown role "robot"`},
		{`{"id":"x","messages":[{"id":"m","role":"user","parts":[{"type":"file"}]}]}`, 400, `"file" parts are not supported`},
		{`{"id":"x","messages":[]}`, 400, "nothing to run"},
		{`{"id":"x","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"a"}]},{"id":"u","role":"user","parts":[{"type":"text","text":"b"}]}]}`, 400, `message id "u" comes twice`},
		{`{"id":"x","messages":[{"id":"a","role":"assistant","parts":[{"type":"dynamic-tool","toolCallId":"c","state":"approval-responded","approval":{"id":"c","approved":true}}]}]}`, 409, "no call waits for approval"},
	} {
		resp, err := http.Post(url+"/api/chat", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(body.Error, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.body, resp.StatusCode, body.Error, c.status, c.says)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, url+"/api/chat", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
}

// A model retry takes back the turn's parts (reset-step) and streams the
// retry's.
func TestModelRetry(t *testing.T) {
	_, url := serve(t)
	cs := post(t, url, chunk{"id": "chat4", "messages": []any{userMsg("u1", "retry")}}).all()
	var types []string
	for _, c := range cs {
		types = append(types, c["type"].(string))
	}
	want := "start start-step text-start text-delta text-end reset-step text-start text-delta text-end finish-step finish"
	if got := strings.Join(types, " "); got != want || text(cs) != "Oops Hello." {
		t.Errorf("chunks %s, want %s\n%s", got, want, dump(cs))
	}
}

// A client that leaves before the end gets the response on its reload,
// once, even when the run paused meanwhile: the approval request is not
// lost.
func TestResumeAfterTheClientLeft(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []func(*uitest.Agent) []aisdk.Option
	}{{"durable stream", []func(*uitest.Agent) []aisdk.Option{withReplay}}, {"memory", nil}} {
		t.Run(c.name, func(t *testing.T) {
			a, url := serve(t, c.opts...)
			live := post(t, url, chunk{"id": "chat5", "messages": []any{userMsg("u1", "tour")}})
			live.next()
			live.resp.Body.Close()
			deadline := time.Now().Add(10 * time.Second)
			for th := a.Threads.Lookup("chat5"); th == nil || th.Paused() == nil; th = a.Threads.Lookup("chat5") {
				if time.Now().After(deadline) {
					t.Fatal("the run did not pause")
				}
				time.Sleep(5 * time.Millisecond)
			}
			resp, err := http.Get(url + "/api/chat/chat5/stream")
			if err != nil {
				t.Fatal(err)
			}
			cs := open(t, resp).all()
			if tools(cs)["c4_4"].state != "approval-requested" || last(cs, "finish")["finishReason"] != "tool-calls" || tools(cs)["c1_1"].output != "one two three" {
				t.Errorf("resumed:\n%s", dump(cs))
			}
			resp, err = http.Get(url + "/api/chat/chat5/stream")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Errorf("a second resume: %d", resp.StatusCode)
			}
		})
	}
}

// A result larger than a NATS message comes back whole from the durable
// stream (in chunks there, reassembled here; the result event leaves its
// content out).
func TestResumeLargeResult(t *testing.T) {
	a, url := serve(t, withReplay)
	live := post(t, url, chunk{"id": "chat6", "messages": []any{userMsg("u1", "big")}})
	live.next()
	live.resp.Body.Close()
	deadline := time.Now().Add(20 * time.Second)
	for th := a.Threads.Lookup("chat6"); th == nil || th.Streaming() != nil || th.Undelivered() == nil; th = a.Threads.Lookup("chat6") {
		if time.Now().After(deadline) {
			t.Fatal("the run did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get(url + "/api/chat/chat6/stream")
	if err != nil {
		t.Fatal(err)
	}
	cs := open(t, resp).all()
	got := tools(cs)["big_1"]
	if got == nil || got.state != "output-available" {
		t.Fatalf("big: %+v", got)
	}
	parts, _ := got.output.([]any)
	want := map[string]any{}
	_ = json.Unmarshal(uitest.BigJSON(), &want)
	if len(parts) != 1 || !reflect.DeepEqual(parts[0].(map[string]any)["json"], want) {
		t.Errorf("big's output is not its result (%d parts)", len(parts))
	}
	if len(got.preliminary) != 0 || text(cs) != "Done." { // a plain return: the final output only
		t.Errorf("%d preliminary outputs, text %q", len(got.preliminary), text(cs))
	}
}

// Tool groups are a data part the message keeps (id "groups").
func TestGroupsAsData(t *testing.T) {
	_, url := serve(t)
	cs := post(t, url, chunk{"id": "chat7", "messages": []any{userMsg("u1", "groups")}}).all()
	g := last(cs, "data-toolstream-groups")
	if g == nil || g["id"] != "groups" || g["transient"] != nil || fmt.Sprint(g["data"].(map[string]any)["active"]) != "[extras]" {
		t.Errorf("groups part %v\n%s", g, dump(cs))
	}
	if tools(cs)["x_3"].output != "extra!" {
		t.Errorf("extra: %+v", tools(cs)["x_3"])
	}
}

// A loaded skill is a data part of its own (id "skills"), beside the
// groups it switched on.
func TestSkillsAsData(t *testing.T) {
	_, url := serve(t)
	cs := post(t, url, chunk{"id": "chat9", "messages": []any{userMsg("u1", "skill")}}).all()
	s := last(cs, "data-"+aisdk.DataSkills)
	if s == nil || s["id"] != "skills" || s["transient"] != nil || fmt.Sprint(s["data"].(map[string]any)["loaded"]) != "[tips]" {
		t.Errorf("skills part %v\n%s", s, dump(cs))
	}
	if g := last(cs, "data-"+aisdk.DataGroups); g == nil || fmt.Sprint(g["data"].(map[string]any)["active"]) != "[extras]" {
		t.Errorf("groups part %v", g)
	}
}

// A resume whose replay cannot start (the bus is gone) reads the response
// kept in memory instead of sending a stream that ends after its start.
func TestResumeWhenTheReplayCannotStart(t *testing.T) {
	a, url := serve(t, withReplay)
	live := post(t, url, chunk{"id": "chat9", "messages": []any{userMsg("u1", "gate")}})
	live.untilToolAsked()
	if err := a.Bus.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, r := resumeAtTheGate(t, a, url, "chat9", live)
	if !reflect.DeepEqual(l, r) {
		t.Errorf("live:\n%s\nresumed:\n%s", dump(l), dump(r))
	}
}

// A resume from the durable stream after the stream dropped the thread's
// first events (its MaxAge or MaxBytes, here a purge) sends the response
// from memory; the replay waited for the thread's first mark for ever.
func TestResumeAfterTheStreamDroppedTheThreadsStart(t *testing.T) {
	a, url := serve(t, withReplay)
	post(t, url, chunk{"id": "chat10", "messages": []any{userMsg("u1", "hi")}}).all()
	st, err := a.Bus.JetStream().Stream(context.Background(), a.Bus.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	live := post(t, url, chunk{"id": "chat10", "messages": []any{userMsg("u1", "hi"), userMsg("u2", "gate")}})
	live.untilToolAsked()
	l, r := resumeAtTheGate(t, a, url, "chat10", live)
	if !reflect.DeepEqual(l, r) {
		t.Errorf("live:\n%s\nresumed:\n%s", dump(l), dump(r))
	}
}

// A host that is closed (the server shuts down) answers 503: the request
// was fine and may be tried again elsewhere or later.
func TestClosedHost(t *testing.T) {
	a, url := serve(t)
	a.Host.Close()
	b, _ := json.Marshal(chunk{"id": "chat11", "messages": []any{userMsg("u1", "hi")}})
	resp, err := http.Post(url+"/api/chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(got), "closed") {
		t.Errorf("status %d: %s, want 503", resp.StatusCode, got)
	}
}

// A resume read from the durable stream ends when the thread ends without
// a cut: Host.Close (the server shuts down) or Host.Forget while the
// response streams. The thread's last mark never reaches the stream then
// (Close detaches the host before the runs end; Forget closes the session
// the mark goes out on), and the replay waited for it for ever: no
// finish, no [DONE], until the client gave up.
func TestResumeEndsWhenTheThreadEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(a *uitest.Agent, id string)
	}{
		{"close", func(a *uitest.Agent, _ string) { a.Host.Close() }},
		{"forget", func(a *uitest.Agent, id string) { a.Host.Forget(id) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, url := serve(t, withReplay)
			live := post(t, url, chunk{"id": "chat13", "messages": []any{userMsg("u1", "gate")}})
			live.untilToolAsked()
			client := &http.Client{Timeout: 5 * time.Second} // a resume that hangs fails
			resp, err := client.Get(url + "/api/chat/chat13/stream")
			if err != nil {
				t.Fatal(err)
			}
			resumed := open(t, resp)
			resumed.next() // under way
			c.end(a, "chat13")
			for _, s := range []*stream{live, resumed} {
				cs := s.all()
				if last(cs, "finish")["finishReason"] != "error" || last(cs, "error") == nil {
					t.Errorf("want error and finish:\n%s", dump(cs))
				}
			}
		})
	}
}

// A response that ends paused asks for every call it waits for, those
// asked in an earlier response included. When two calls of one stage ask,
// the second's request may come after the first response was cut (a
// response of its own that nobody reads), and the response that answers
// the first ended paused on the second without a tool-approval-request:
// the client had nothing to approve, and the call waited until its
// approval expired.
func TestPausedResponseAsksForEveryWaitingCall(t *testing.T) {
	a, url := serve(t)
	first := post(t, url, chunk{"id": "chat14", "messages": []any{userMsg("u1", "two")}}).all()
	calls := a.WaitPaused(t, "chat14", 2)
	var asked string
	for _, c := range first {
		if c["type"] == "tool-approval-request" {
			asked, _ = c["toolCallId"].(string)
			break
		}
	}
	other := calls[0]
	if other == asked {
		other = calls[1]
	}
	parts := []any{chunk{"type": "dynamic-tool", "toolName": "ask", "toolCallId": asked, "state": "approval-responded", "approval": chunk{"id": asked, "approved": true}}}
	second := post(t, url, chunk{"id": "chat14", "messages": []any{userMsg("u1", "two"), chunk{"id": first[0]["messageId"], "role": "assistant", "parts": parts}}}).all()
	if last(second, "finish")["finishReason"] != "tool-calls" || tools(second)[asked] == nil || tools(second)[asked].output != "asked" {
		t.Fatalf("the answer's response:\n%s", dump(second))
	}
	var req chunk
	for _, c := range second {
		if c["type"] == "tool-approval-request" && c["toolCallId"] == other {
			req = c
		}
	}
	if req == nil || req["approvalId"] != other {
		t.Fatalf("the response ends paused on %s but does not ask for it:\n%s", other, dump(second))
	}
}

// useChat sends the whole conversation with every request, the tool
// parts' outputs toolstream sent included, which the handler does not
// read: a chat with a few large results (1.5 MiB each here, screenshots
// or files in life) is continued all the same. The body used to be read
// whole and refused past 4 MiB (413), so every later request of the chat
// was refused. What the handler keeps is still bounded (MaxBody).
func TestLongHistory(t *testing.T) {
	_, url := serve(t)
	big := strings.Repeat("x", 3<<19)
	var parts []any
	for i := range 4 {
		id := fmt.Sprintf("c%d", i)
		parts = append(parts, chunk{"type": "step-start"}, chunk{"type": "text", "text": "Let me look.", "state": "done"},
			chunk{"type": "dynamic-tool", "toolName": "big", "toolCallId": id, "state": "output-available", "input": chunk{}, "output": big})
	}
	msgs := []any{userMsg("u1", "hi"), chunk{"id": "a1", "role": "assistant", "parts": parts}, userMsg("u2", "hi")}
	cs := post(t, url, chunk{"id": "chat15", "messages": msgs}).all()
	if text(cs) != "Hello." || last(cs, "finish")["finishReason"] != "stop" {
		t.Fatalf("the response:\n%s", dump(cs))
	}

	// What the handler keeps is bounded: user messages past MaxBody are refused.
	b, _ := json.Marshal(chunk{"id": "chat15", "messages": []any{userMsg("u3", strings.Repeat("y", aisdk.MaxBody))}})
	resp, err := http.Post(url+"/api/chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(got), "the handler keeps") {
		t.Errorf("a user message past MaxBody: %d %s", resp.StatusCode, got)
	}

	// The body as a whole is bounded too (here at 8 MiB, not MaxWire).
	aisdk.SetMaxWire(8 << 20)
	t.Cleanup(func() { aisdk.SetMaxWire(0) })
	huge := io.MultiReader(strings.NewReader(`{"id":"chat15","x":"`), io.LimitReader(zeros{}, 8<<20), strings.NewReader(`"}`))
	resp, err = http.Post(url+"/api/chat", "application/json", huge)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(got), "body limit") {
		t.Errorf("a body past MaxWire: %d %s", resp.StatusCode, got)
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

// A resume after the host closed, of a response no client read to its
// end, is the response kept in memory, whole: the durable stream has no
// end for it (the closing host sends no mark).
func TestResumeAfterClose(t *testing.T) {
	a := uitest.New(t)
	h := aisdk.NewHandler(a.Host, withReplay(a)...)
	mux := http.NewServeMux()
	mux.Handle("POST /api/chat", h)
	mux.Handle("GET /api/chat/{id}/stream", h)
	srv := httptest.NewUnstartedServer(mux)
	closed := make(chan struct{}, 4)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	url := srv.URL
	live := post(t, url, chunk{"id": "chat16", "messages": []any{userMsg("u1", "gate")}})
	live.untilToolAsked()
	live.resp.Body.Close()
	// The server saw the client go (its handler returned) before the host
	// closes: otherwise the handler could still write the response's end
	// into the closed connection, count it delivered, and the resume would
	// rightly find nothing to send (204; it failed so about once in 75).
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the client's connection close")
	}
	a.Host.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url + "/api/chat/chat16/stream")
	if err != nil {
		t.Fatal(err)
	}
	cs := open(t, resp).all()
	if tools(cs)["g_1"] == nil || text(cs) != "Waiting." || last(cs, "finish")["finishReason"] != "error" {
		t.Errorf("resumed:\n%s", dump(cs))
	}
}

// A resume of a response that continues a run after an approval sends
// the run's message from its start: the responses before it, then it.
// useChat starts the message over on a resume (its transport's
// resumeStreamIsReplay), and the response alone went on with tool parts
// it never began: ai's reader failed with "No tool invocation found for
// tool call ID" on the approved call's output (TestAISDKReadsResumeAfterAnApproval).
func TestResumeAfterAnApproval(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []func(*uitest.Agent) []aisdk.Option
	}{{"durable stream", []func(*uitest.Agent) []aisdk.Option{withReplay}}, {"memory", nil}} {
		t.Run(c.name, func(t *testing.T) {
			first, second, resumed := resumeAfterAnApproval(t, c.opts...)
			whole := append(append([]chunk{}, first[:len(first)-1]...), second[1:]...) // one start, one finish
			if !reflect.DeepEqual(resumed, whole) {
				t.Errorf("resumed:\n%s\nwant the run's message from its start:\n%s", dump(resumed), dump(whole))
			}
			if tl := tools(resumed); tl["s1_1"] == nil || tl["s1_1"].output != "saved: s" || tl["s2_3"] == nil || tl["s2_3"].output != "opened" {
				t.Errorf("resumed tools %+v", tl)
			}
		})
	}
}

// The `ai` package's own reader makes the same message of the resumed
// stream as of the live ones (the first response, then the one that
// continued it after the approval).
func TestAISDKReadsResumeAfterAnApproval(t *testing.T) {
	uitest.Node(t)
	first, second, resumed := resumeAfterAnApproval(t, withReplay)
	message := func(streams ...[]chunk) string {
		b, _ := json.Marshal(streams)
		f := filepath.Join(t.TempDir(), "streams.json")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out := uitest.RunNode(t, "aisdk-read.mjs", f)
		for _, line := range strings.Split(out, "\n") {
			if m, ok := strings.CutPrefix(line, "message "); ok {
				return m
			}
		}
		t.Fatalf("no message in %s", out)
		return ""
	}
	live, again := message(first, second), message(resumed)
	if live != again || !strings.Contains(again, `"output":"saved: s"`) {
		t.Errorf("live: %s\nresumed: %s", live, again)
	}
}

// resumeAfterAnApproval runs "slow": its first response asks for
// write_note's approval; the answer's response runs it and waits at the
// gate, where the chat is resumed. It returns the live responses and the
// resumed stream.
func resumeAfterAnApproval(t *testing.T, opts ...func(*uitest.Agent) []aisdk.Option) (first, second, resumed []chunk) {
	t.Helper()
	a, url := serve(t, opts...)
	first = post(t, url, chunk{"id": "chat17", "messages": []any{userMsg("u1", "slow")}}).all()
	if tools(first)["s1_1"] == nil || tools(first)["s1_1"].state != "approval-requested" {
		t.Fatalf("the first response:\n%s", dump(first))
	}
	answer := chunk{"id": first[0]["messageId"], "role": "assistant", "parts": []any{chunk{"type": "dynamic-tool", "toolName": "write_note",
		"toolCallId": "s1_1", "state": "approval-responded", "approval": chunk{"id": "s1_1", "approved": true}}}}
	live := post(t, url, chunk{"id": "chat17", "messages": []any{userMsg("u1", "slow"), answer}})
	live.untilToolAsked()
	second, resumed = resumeAtTheGate(t, a, url, "chat17", live)
	return first, second, resumed
}

// TestSlowClientNotDropped: a client that reads slowly but steadily (a
// raw TCP connection with small socket buffers, reading about 1 MiB/s)
// gets the whole of a large frame (big's 1.5 MiB result, some 1.5 s on
// the wire)
// although the host's write timeout (500 ms) is far shorter than a frame's
// transfer: the bound is on each 32 KiB piece, not on the frame
// (ui.WithWriteTimeout). With the frame written under one deadline, the
// handler drops the client and the stream ends without [DONE].
func TestSlowClientNotDropped(t *testing.T) {
	const bound = 500 * time.Millisecond
	a := uitest.New(t, ui.WithWriteTimeout(bound))
	mux := http.NewServeMux()
	mux.Handle("POST /api/chat", aisdk.NewHandler(a.Host))
	addr, returned := uitest.SmallBuffers(t, mux)
	body, _ := json.Marshal(chunk{"id": "chat-slow", "messages": []any{userMsg("u1", "big")}})
	start := time.Now()
	cs := open(t, uitest.SlowClient(t, addr, http.MethodPost, "/api/chat", body, 1<<20)).all()
	took := time.Since(start)
	testutil.WaitFor(t, returned, "the handler to return")
	got := tools(cs)["big_1"]
	if got == nil || got.state != "output-available" || len(got.preliminary) != 0 {
		t.Fatalf("big: %v, %d preliminary outputs", got.state, len(got.preliminary))
	}
	parts, _ := got.output.([]any)
	want := map[string]any{}
	_ = json.Unmarshal(uitest.BigJSON(), &want)
	if len(parts) != 1 || !reflect.DeepEqual(parts[0].(map[string]any)["json"], want) {
		t.Errorf("big's output is not its result (%d parts)", len(parts))
	}
	if text(cs) != "Done." {
		t.Errorf("text %q", text(cs))
	}
	if took < 2*bound {
		t.Errorf("the stream took %v, not much longer than the write timeout %v: the test proves nothing", took, bound)
	}
	t.Logf("the slow client read the whole stream in %v (write timeout %v)", took.Round(time.Millisecond), bound)
}

// TestStuckClientDropped: a client that posts its message and then stops
// reading, its connection open (a raw TCP connection with small socket
// buffers, the response's frames larger than they hold: big's 1.5 MiB
// result), is dropped once a write has waited the host's write timeout,
// and treated as a client that went away: the run goes on, and its
// response stays undelivered for a resume. Before, the handler waited in
// the write for ever, holding its goroutine and the response (the test
// gave up after 10 s).
func TestStuckClientDropped(t *testing.T) {
	const bound = 200 * time.Millisecond
	a := uitest.New(t, ui.WithWriteTimeout(bound))
	h := aisdk.NewHandler(a.Host)
	mux := http.NewServeMux()
	mux.Handle("POST /api/chat", h)
	mux.Handle("GET /api/chat/{id}/stream", h)
	addr, returned := uitest.SmallBuffers(t, mux)
	body, _ := json.Marshal(chunk{"id": "chat-stuck", "messages": []any{userMsg("u1", "bigwait")}})
	start := time.Now()
	uitest.StuckClient(t, addr, http.MethodPost, "/api/chat", body)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatalf("the handler still writes to a client that does not read, %v after the request (write timeout %v)", time.Since(start), bound)
	}
	took := time.Since(start)
	if took > bound+3*time.Second {
		t.Errorf("the handler returned %v after the request, with a write timeout of %v", took, bound)
	}
	th := a.Threads.Lookup("chat-stuck")
	l := th.Undelivered()
	if l == nil {
		t.Fatal("no response")
	}
	select {
	case <-l.Done():
		t.Fatalf("the run ended when its client was dropped: %+v", l.End())
	default:
	}
	close(a.Gate)
	testutil.WaitFor(t, l.Done(), "the run to go on through the gate")
	if e := l.End(); e.Kind != thread.EndAnswer {
		t.Fatalf("the run ended %+v", e)
	}
	resp, err := http.Get("http://" + addr + "/api/chat/chat-stuck/stream")
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d %v", resp.StatusCode, err)
	}
	for _, want := range []string{`"output":"opened"`, `"finishReason":"stop"`, "data: [DONE]"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the resumed response (%d bytes) has no %s", len(all), want)
		}
	}
	t.Logf("handler returned %v after the request (write timeout %v)", took.Round(time.Millisecond), bound)
}

// TestTruncatedAnswer: an answer the output token limit cut (the model's
// reply finished with FinishLength) ends the stream with finishReason
// "length", the protocol's word for it, so that useChat does not show half
// an answer as whole. Before, it was "stop", as for a whole answer.
func TestTruncatedAnswer(t *testing.T) {
	_, url := serve(t)
	cs := post(t, url, chunk{"id": "chat-cut", "messages": []any{userMsg("u1", "cut")}}).all()
	if got := last(cs, "finish")["finishReason"]; got != "length" || text(cs) != "The three causes are: first, the" {
		t.Errorf("finish %v, text %q\n%s", got, text(cs), dump(cs))
	}
	cs = post(t, url, chunk{"id": "chat-whole", "messages": []any{userMsg("u1", "hi")}}).all()
	if got := last(cs, "finish")["finishReason"]; got != "stop" {
		t.Errorf("a whole answer: finish %v\n%s", got, dump(cs))
	}
}
