package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/leak"
)

func TestMain(m *testing.M) {
	leak.VerifyTestMain(m, func() {
		if demoBinDir != "" {
			os.RemoveAll(demoBinDir)
		}
	})
}

// TestDemoRuns runs the scripted tour in process, flat out, and checks what
// the terminal shows: the turns, progress apart from results, the errors a
// model gets, the interceptors at work and the summary table.
func TestDemoRuns(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once", "-session", "tour"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{
		"model: scripted (deterministic; -provider openai|anthropic with -model and an API key drive a real one)",
		"=== Turn 1: tool_search finds the group that saves notes",
		"offered: count_lines, watch_folder, ask_user, load_skill_through_path, tool_search, reset_tools",
		"[call_q] tool_search -> success", "1. notes: Save notes for the user.",
		`"activated":["notes"],"by":"model"`,
		"offered: count_lines, watch_folder, ask_user, write_note, load_skill_through_path, tool_search, reset_tools",
		`Skill "file-analysis" loaded.`,
		`"activated":["files"],"by":"skill"`,
		"offered: count_lines, watch_folder, ask_user, hash_files, search_text, write_note, folder_stats, file_inventory, load_skill_through_path, tool_search, reset_tools",
		// errors the model can act on
		`did you mean "count_lines"?`,
		"- query: is required", `- max_matches: must be an integer, got string "many"`,
		// the approval, answered by the scripted agent with an edited title
		"approval call_6   write_note", "approved call_6   by the scripted agent (title edited to demo-summary)",
		"demo-summary.md:\n", "Questions to [redacted email]",
		// retry, eviction, the external tool, the stopped call
		"attempt 2: the stats service did not answer", "(answered on attempt 3)",
		"[call_8] file_inventory -> success", "The result is too large to show here",
		"waiting     call_9   ask_user (external)", "answered by the demo's stand-in for the user",
		"(the user presses stop after 1.5s)", "[call_10] watch_folder -> interrupted",
		// the end
		"model: Done. Mostly Go", "I stopped watching when you asked.",
		// the context policy: the answer's request leaves turn 1 out
		"context     turn 6: 3 of 19 messages left out (call_q, call_0), summarized; the model is sent ",
		"run hook End: answer after 6 turns; the conversation keeps all 20 messages, the model was last sent 17",
		"=== Summary: 6 turns, 13 calls", "states: 1 interrupted, 10 success, 2 error",
		"0 progress dropped, 0 undelivered",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q\n%s", want, s)
		}
	}
	// Event lines are columns (state, call id, tool): an interrupted call's
	// line has no extra spaces, its tool stands where the start line's does
	// (issue 29 read "interrupted call_1" followed by the id's padding as
	// stray spaces).
	for _, id := range []string{"call_1 ", "call_10"} {
		var cols []int
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[1] == strings.TrimSpace(id) && (f[0] == "start" || f[0] == "success" || f[0] == "interrupted") {
				cols = append(cols, strings.Index(l, f[2]))
			}
		}
		if len(cols) < 2 || slices.Min(cols) != slices.Max(cols) || cols[0] != len("  interrupted call_10  ") {
			t.Errorf("%s: the tool's column on its event lines is %v, want %d on each", id, cols, len("  interrupted call_10  "))
		}
	}
	if _, after, _ := strings.Cut(s, "[call_6] write_note"); strings.Contains(after, "ops@example.com") {
		t.Error("the e-mail address reached the model")
	}
	// Progress is for people: none of the progress messages printed (the
	// plain lines "  50%  call_1  counted cmd/demo/main.go") is in what the
	// model saw.
	progress := regexp.MustCompile(`(?m)^  +\d+%\s+call_\w+\s+(.+)$`).FindAllStringSubmatch(s, -1)
	if len(progress) < 10 {
		t.Fatalf("only %d progress lines", len(progress))
	}
	for _, sec := range strings.Split(s, "--- results")[1:] {
		res, _, _ := strings.Cut(sec, "=== Turn")
		for _, p := range progress {
			if strings.Contains(res, p[1]) {
				t.Errorf("progress message %q leaked into the results:\n%s", p[1], res)
			}
		}
	}
	// The summary has a row per call with its state.
	for _, row := range []string{`3\s+call_4\s+count_line\s+error`, `4\s+call_7\s+folder_stats\s+success`, `5\s+call_10\s+watch_folder\s+interrupted`} {
		if !regexp.MustCompile(row).MatchString(s) {
			t.Errorf("summary lacks a row like %s", row)
		}
	}
	m := regexp.MustCompile(`saved in full to (\S+\.txt)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no eviction location:\n%s", s)
	}
	stored, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("the evicted result is not where the model was told: %v", err)
	}
	if n := strings.Count(string(stored), "\n"); n < 100 || !strings.Contains(string(stored), "cmd/demo/main_test.go") {
		t.Errorf("the stored inventory is not complete (%d lines)", n)
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-session", ""}, "-session"},
		{[]string{"-session", "a\x00b"}, "control character"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-approve", "maybe"}, "want auto, page or terminal"},
		{[]string{"-approve", "page", "-listen", ""}, "needs the web page"},
		{[]string{"-speed", "-1"}, "must be 0 (flat out) or from 0.01 up"},
		{[]string{"-durable=false"}, "durable"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-dir", "/no/such/folder"}, "not a folder"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error about %q", tc.args, err, tc.want)
		}
		if code := exitCode(context.Background(), err, &errOut); code != 2 {
			t.Errorf("%v: exit status %d, want 2", tc.args, code)
		}
	}
}

// TestDemoAcceptsFlags: sensible values pass the checks.
func TestDemoAcceptsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-speed", "0"}, {"-speed", "0.5"}, {"-speed", "4"}, {"-max-turns", "1"},
		{"-listen", ":0"}, {"-listen", "[::1]:7070"}, {"-listen", "localhost:7070"}, {"-nats-listen", ""}, {"-listen", "", "-durable=false"},
		{"-nats", "nats://127.0.0.1:4222"}, {"-nats", "localhost"}, {"-nats", "nats://a:4222, nats://b:4222"}, {"-nats", "tls://user:pw@host:4443"},
		{"-nats", "nats://127.0.0.1:4222", "-nats-listen", ""},
		{"-base-url", "http://localhost:11434/v1"}, {"-base-url", "https://api.example.com/v1"},
		{"-approve", "page"}, {"-session", "my session"},
	} {
		if _, err := parseFlags(args, nil, io.Discard); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

func TestDemoHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-help"}, &out, &errOut)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-help: %v", err)
	}
	if code := exitCode(context.Background(), err, &errOut); code != 0 || errOut.Len() > 0 {
		t.Errorf("-help: exit status %d, stderr %q", code, errOut.String())
	}
	for _, want := range []string{"-nats ", "-durable", "-session", "-listen", "-speed", "-once", "-approve", "-model", "-base-url", "-api-key", "-dir", "-max-turns", "exit status"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %s:\n%s", want, out.String())
		}
	}
}

// TestDemoWithOpenAICompatibleServer drives the same loop with the real
// model adapter against a Chat Completions server: the model asks for
// tools, the results go back as tool messages, and its answer ends the run.
func TestDemoWithOpenAICompatibleServer(t *testing.T) {
	f := newFakeOpenAI(t,
		completion("tool_calls", `{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\"cmd\"}"}},
			{"id":"call_b","type":"function","function":{"name":"reset_tools","arguments":"{\"notes\":true}"}}]}`),
		completion("stop", `{"role":"assistant","content":"The cmd folder is mostly Go."}`),
	)
	var out, errOut bytes.Buffer
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once",
		"-model", "test-model", "-base-url", f.srv.URL + "/v1", "-api-key", "sk-test"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"a real model through its HTTP API", "[call_a] count_lines -> success", "[call_b] reset_tools -> success",
		"model: The cmd folder is mostly Go.", "=== Summary: 2 turns, 2 calls"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var second struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[1], &second); err != nil {
		t.Fatal(err)
	}
	// The results reached the model as tool messages, with their ids.
	var toolMsgs []string
	for _, m := range second.Messages {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m.ToolCallID+": "+fmt.Sprint(m.Content))
		}
	}
	if len(toolMsgs) != 2 || !strings.Contains(toolMsgs[0], `call_a: [{"language":"Go"`) || !strings.Contains(toolMsgs[1], "call_b: Active tool groups: notes.") {
		t.Errorf("tool messages: %q", toolMsgs)
	}
	// The tool list was read again for the second turn: write_note is on.
	var names []string
	for _, tl := range second.Tools {
		names = append(names, tl.Function.Name)
	}
	if !slices.Contains(names, "write_note") {
		t.Errorf("second turn offered %v, want write_note after reset_tools", names)
	}
}

// TestDemoModelWithoutKey: a model named without a key falls back to the
// scripted one and says why.
func TestDemoModelWithoutKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	cfg, err := parseFlags([]string{"-model", "gpt-x"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m, why, _ := chooseModel(cfg)
	if modelName(m) != "scripted" || !strings.Contains(why, "no API key") {
		t.Fatalf("got %s%s", modelName(m), why)
	}
}

// TestDemoTakenPorts: when the addresses for the NATS clients and the page
// are taken, the demo says where it listens instead, and runs at once (the
// embedded server used to wait 10 s and fail).
func TestDemoTakenPorts(t *testing.T) {
	var taken []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		taken = append(taken, l.Addr().String())
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	args := []string{"-dir", "../..", "-nats-listen", taken[0], "-listen", taken[1], "-speed", "0", "-once", "-session", "taken", "-max-turns", "1"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	s := out.String()
	nats := regexp.MustCompile(`NATS: nats://(127\.0\.0\.1:\d+) `).FindStringSubmatch(s)
	page := regexp.MustCompile(`live page: http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(s)
	if nats == nil || page == nil || nats[1] == taken[0] || page[1] == taken[1] {
		t.Errorf("NATS at %v, page at %v; taken: %v\n%s", nats, page, taken, s)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %v", d)
	}
}
