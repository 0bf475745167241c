package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

func TestSafeLine(t *testing.T) {
	for _, tc := range []struct{ in, line, text string }{
		{"plain text", "plain text", "plain text"},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`, `\x1b[2J\x1b[H`},
		{"cr\rover", `cr\rover`, `cr\rover`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`, `c1 \u009b31m`},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`, `bidi \u202eevil\u202c \u2066x\u2069`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"日本語 é 🙂", "日本語 é 🙂", "日本語 é 🙂"},
		{"sep\u2028here", `sep\u2028here`, `sep\u2028here`},
		{"nul\x00", `nul\x00`, `nul\x00`},
	} {
		if got := safeLine(tc.in); got != tc.line {
			t.Errorf("safeLine(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := safeText(tc.in); got != tc.text {
			t.Errorf("safeText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

// checkTerminalSafe fails unless s holds nothing a terminal would act on:
// no control character but \n and \t (with layout), no C1 control, no
// bidirectional override, valid UTF-8.
func checkTerminalSafe(t *testing.T, what, s string, layout bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%s: invalid UTF-8: %q", what, s)
	}
	for i, r := range s {
		if layout && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || dangerous(r) {
			t.Fatalf("%s: %U at byte %d: %q", what, r, i, s)
		}
	}
}

// FuzzSafeText: whatever the input, the escaped text holds nothing a
// terminal acts on, text without such characters is left as it is, and
// escaping is done once (escaped text escapes to itself).
func FuzzSafeText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;t\x07", "\u009b2J", "\u202e", "\xff", "a\nb\tc\r", "日本語", "\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, text := safeLine(s), safeText(s)
		checkTerminalSafe(t, "safeLine", line, false)
		checkTerminalSafe(t, "safeText", text, true)
		if strings.Count(text, "\n") != strings.Count(s, "\n") {
			t.Fatalf("safeText changed the lines of %q: %q", s, text)
		}
		if strings.Contains(line, "\n") {
			t.Fatalf("safeLine left a newline in %q", s)
		}
		clean := utf8.ValidString(s)
		for _, r := range s {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || dangerous(r) {
				clean = false
			}
		}
		if clean && text != s {
			t.Fatalf("safeText changed harmless text %q into %q", s, text)
		}
		if safeText(text) != text || safeLine(line) != line {
			t.Fatalf("escaping %q twice changed it", s)
		}
	})
}

// TestSafeArgs: printf arguments that are text are escaped, whatever their
// type; numbers are left alone.
func TestSafeArgs(t *testing.T) {
	type name string
	got := fmt.Sprintf("%s %s %s %s %v %d", safeArgs([]any{"\x1b[2J", name("\x07"), []byte("\x1b"), errors.New("e\x1b"), time.Duration(1), 42})...)
	if want := `\x1b[2J \x07 \x1b e\x1b 1ns 42`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var nilErr *os.PathError
	if got := fmt.Sprintf("%v", safeArgs([]any{nilErr})...); got != "<nil>" {
		t.Errorf("a nil pointer: %q", got)
	}
}

// TestExitMessageEscaped: an error message from outside (an API's, say)
// reaches stderr escaped.
func TestExitMessageEscaped(t *testing.T) {
	var buf bytes.Buffer
	code := exitCode(context.Background(), errors.New("openai m: 400: bad \x1b]0;pwned\x07 request"), &buf)
	if code != 1 || buf.String() != "demo: openai m: 400: bad \\x1b]0;pwned\\x07 request\n" {
		t.Errorf("exit %d, %q", code, buf.String())
	}
}

// hostileFolder makes a folder whose file names and contents hold escape
// sequences, C1 controls, bidirectional overrides and invalid UTF-8.
func hostileFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"title\x1b]0;pwned\x07.go": "package x // TODO \x1b[2J\x1b[H screen cleared\n",
		"bidi\u202egol.txt":        "TODO \u009b31m red by C1\n",
		"bad\xff.md":               "TODO \xff\xfe not UTF-8\n",
		"new\nline\rname.txt":      "TODO \x1b[1A\x1b[K up and erase\n",
		"plain.go":                 "package x\n",
		"bell\x07\x1b[5n.json":     `{"TODO":"\u001b"}` + "\n",
		"日本語\u200f\u2066名前.yaml":   "TODO: x\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDemoEscapesOutsideText runs the demo binary, driven by a model
// through the OpenAI API, on a folder of hostile file names and contents:
// the model's words, tool names and arguments, progress messages, results,
// a rejection reason posted on the page, the API's error message and the
// log all carry escape sequences, and none reaches stdout or stderr; they
// show as visible escapes instead.
func TestDemoEscapesOutsideText(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOpenAI(t,
		completion("tool_calls", `{"role":"assistant","content":"Looking \u001b[31mnow\u001b]0;pwned\u0007","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"count_lines","arguments":"{\"dir\":\".\"}"}},
			{"id":"call_b","type":"function","function":{"name":"reset_tools","arguments":"{\"notes\":true,\"files\":true}"}},
			{"id":"call_c","type":"function","function":{"name":"evil\u001b]0;pwned\u0007\u009b2J","arguments":"{\"x\":\"\u001b[2J\"}"}}]}`),
		completion("tool_calls", `{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_s","type":"function","function":{"name":"search_text","arguments":"{\"dir\":\".\",\"query\":\"TODO\"}"}},
			{"id":"call_w","type":"function","function":{"name":"write_note","arguments":"{\"title\":\"x\",\"text\":\"y\"}"}}]}`),
		fakeReply{status: http.StatusBadRequest, body: `{"error":{"message":"bad \u001b]0;pwned\u0007 request \u202e","type":"invalid_request_error","code":"bad\u001b[2J"}}`},
	)
	web := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-dir", hostileFolder(t), "-listen", web, "-approve", "page", "-nats-listen", "",
		"-speed", "0", "-once", "-v", "-session", "hostile", "-model", "m", "-api-key", "k", "-base-url", f.srv.URL+"/v1")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The person at the page rejects the note with a hostile reason.
	body := `{"session":"hostile","call":"call_w","approve":false,"reason":"no \u001b]0;pwned\u0007 \u202ereversed"}`
	for {
		resp, err := http.Post("http://"+web+"/api/approve", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("the demo ended (%v) before the approval:\n%s\n%s", err, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	http.DefaultClient.CloseIdleConnections()
	var exit *exec.ExitError
	if err := <-exited; !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1 (the API's error)\n%s", err, stderr.String())
	}
	out, errs := stdout.String(), stderr.String()
	checkTerminalSafe(t, "stdout", out, true)
	checkTerminalSafe(t, "stderr", errs, true)
	for _, want := range []string{
		`model: Looking \x1b[31mnow\x1b]0;pwned\x07`,                  // the model's words
		`call_c   evil\x1b]0;pwned\x07\u009b2J`,                       // a tool name
		`title\x1b]0;pwned\x07.go:1: package x // TODO \x1b[2J\x1b[H`, // a result: a file's name and content
		`bidi\u202egol.txt`, `bad\xff.md`, `new\nline\rname.txt`, `bell\x07\x1b[5n.json`, `日本語\u200f\u2066名前.yaml`,
		`rejected call_w   by the web page: no \x1b]0;pwned\x07 \u202ereversed`, // the reason typed on the page
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "demo: agent: turn 3: openai") || !strings.Contains(last, `bad \x1b]0;pwned\x07 request \u202e`) {
		t.Errorf("the API's error, last line of stderr: %q", last)
	}
	if !strings.Contains(errs, `evil\x1b]0;pwned`) { // the log, -v
		t.Errorf("the log does not name the unknown tool:\n%s", errs)
	}
}

// TestTermViewEscapes: every way text reaches the terminal view (events,
// turns, results, the answer, the summary, printf, a question) carries a
// hostile text, live and plain, wrapped or not: the only sequences that
// reach the terminal are the view's own cursor moves.
func TestTermViewEscapes(t *testing.T) {
	evil := "x\x1b]0;pwned\x07\x1b[2J\u009b1A\u202e\xff\r\ny"
	for _, tc := range []struct {
		name string
		live bool
		cols int
	}{{"plain", false, 0}, {"live", true, 0}, {"live-80", true, 80}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncBuffer
			var size func() (int, int, bool)
			if tc.cols > 0 {
				size = func() (int, int, bool) { return tc.cols, 24, true }
			}
			v := newTermViewSized(&buf, tc.live, size)
			call := toolkit.Call{ID: "c" + evil, Name: "t" + evil, Args: []byte(evil)}
			v.user(evil)
			v.turn(1, Turn{Note: evil, Text: evil, Calls: []toolkit.Call{call}}, []toolkit.Definition{{Name: evil}})
			v.Observe(&events.Event{Type: events.TypeStart, Call: call.ID, Tool: call.Name})
			f := 0.5
			v.Observe(&events.Event{Type: events.TypeProgress, Call: call.ID, Tool: call.Name, Progress: &events.Progress{Message: evil, Fraction: &f}})
			v.Observe(&events.Event{Type: events.TypeProgress, Call: call.ID, Tool: call.Name, Progress: &events.Progress{Message: evil}})
			v.redraw()
			v.Observe(&events.Event{Type: events.TypeSuspend, Call: call.ID, Tool: call.Name, Suspend: &events.Suspend{Reason: evil}})
			v.redraw()
			v.Observe(&events.Event{Type: "groups", Data: []byte(`"` + evil + `"`)})
			v.printf("  rejected %-8s by %s: %s\n", call.ID, "the web page", evil)
			v.ask("  Approve %s? ", evil)
			v.answered()
			v.Observe(&events.Event{Type: events.TypeResult, Call: call.ID, Tool: call.Name, Result: &events.Result{State: events.State(evil)}})
			r := toolkit.Result{Call: call, State: events.State(evil), Content: []events.Part{events.Text(evil + "\n" + evil)}}
			v.results([]toolkit.Result{r}, time.Second)
			v.answer(2, Turn{Text: evil})
			v.summary(runSummary{Turns: 2, Results: []toolkit.Result{r}}, natsbus.PublisherStats{})
			v.stop()
			scr := newScreen(200)
			if tc.cols > 0 {
				scr = newScreen(tc.cols)
			}
			scr.write(buf.String())
			if len(scr.bad) > 0 {
				t.Errorf("reached the terminal: %q", scr.bad)
			}
			if n := strings.Count(buf.String(), `\x1b]0;pwned\x07`); n < 10 {
				t.Errorf("the hostile text shows escaped %d times only:\n%s", n, buf.String())
			}
		})
	}
}
