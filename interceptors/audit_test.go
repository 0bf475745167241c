package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

type auditBuf struct{ testutil.SyncBuffer }

// lines decodes the JSON lines written so far.
func (b *auditBuf) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func auditFixture(t *testing.T, opts ...interceptors.AuditOption) (*toolkit.Toolkit, *auditBuf) {
	buf := &auditBuf{}
	sl := &retrySleeps{}
	tk := icKit(t, nil, interceptors.Audit(zerolog.New(buf), opts...), interceptors.Retry(interceptors.RetrySleep(sl.sleep)))
	var ran icCounter
	testutil.Add(t, tk,
		flakyTool(t, "flaky", 3, &ran),
		toolkit.MustTool(toolkit.Spec{Name: "echo", ConcurrencySafe: true}, func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return "echo: " + in.Text, nil
		}),
		icTool(t, toolkit.Spec{Name: "broken"}, func(ctx context.Context) (string, error) { return "", errors.New("disk full") }),
	)
	return tk, buf
}

func TestAuditOneLinePerCall(t *testing.T) {
	tk, buf := auditFixture(t)
	s := testutil.Session(t, tk, "sess-1")
	run := s.Start(context.Background(), []toolkit.Call{
		testutil.Call("c1", "echo", `{"text":"secret"}`), testutil.Call("c2", "echo", `{"text":"x"}`),
		testutil.Call("c3", "flaky", `{}`), testutil.Call("c4", "broken", `{}`),
	})
	run.Wait()
	lines := buf.lines(t)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	byCall := map[string]map[string]any{}
	for _, l := range lines {
		byCall[l["call"].(string)] = l
	}
	c1 := byCall["c1"]
	for k, want := range map[string]any{"tool": "echo", "session": "sess-1", "run": run.ID(), "state": "success",
		"attempts": 1.0, "level": "info", "message": "tool call"} {
		if c1[k] != want {
			t.Fatalf("%s = %v, want %v (line %v)", k, c1[k], want, c1)
		}
	}
	if _, ok := c1["duration_ms"].(float64); !ok {
		t.Fatalf("no duration: %v", c1)
	}
	for _, k := range []string{"args", "result", "error"} {
		if _, ok := c1[k]; ok {
			t.Fatalf("%s logged by default: %v", k, c1)
		}
	}
	if c3 := byCall["c3"]; c3["attempts"] != 3.0 || c3["state"] != "success" {
		t.Fatalf("retried call: %v", c3)
	}
	if c4 := byCall["c4"]; c4["state"] != "error" || c4["error"] != "disk full" || c4["level"] != "warn" {
		t.Fatalf("failed call: %v", c4)
	}
}

func TestAuditArgsAndResults(t *testing.T) {
	tk, buf := auditFixture(t, interceptors.AuditArgs(), interceptors.AuditResults())
	icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "echo", "{\n  \"text\": \"hi\"\n}"))
	lines := buf.lines(t)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	args, _ := lines[0]["args"].(map[string]any)
	if args["text"] != "hi" || lines[0]["result"] != "echo: hi" {
		t.Fatalf("line %v", lines[0])
	}
}

// TestAuditBoundsLines: long arguments and results are cut to AuditMaxBytes
// at a character boundary and their full size logged, so a large result
// never becomes a log line as large; calls of unknown tools are recorded too.
func TestAuditBoundsLines(t *testing.T) {
	tk, buf := auditFixture(t, interceptors.AuditArgs(), interceptors.AuditResults(), interceptors.AuditMaxBytes(64))
	s := testutil.Session(t, tk, "s")
	long := strings.Repeat("é", 100) // 200 bytes: a cut in the middle of a character must step back
	icRun(t, s, testutil.Call("c1", "echo", `{"text":"`+long+`"}`))
	icRun(t, s, testutil.Call("c2", "ehco", `{}`))
	lines := buf.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	l := lines[0]
	args, _ := l["args"].(string)
	result, _ := l["result"].(string)
	if !strings.HasSuffix(args, "…") || len(args) > 64+len("…") || !utf8.ValidString(args) || l["args_bytes"] != float64(len(`{"text":"`+long+`"}`)) {
		t.Fatalf("args %q (%v bytes)", args, l["args_bytes"])
	}
	if !strings.HasSuffix(result, "…") || len(result) > 64+len("…") || !utf8.ValidString(result) || l["result_bytes"] != float64(len("echo: "+long)) {
		t.Fatalf("result %q (%v bytes)", result, l["result_bytes"])
	}
	u := lines[1]
	if u["tool"] != "ehco" || u["unknown_tool"] != true || u["state"] != "error" || !strings.Contains(u["result"].(string), "echo") {
		t.Fatalf("unknown call: %v", u)
	}
	// The default bound: 4 KiB.
	tk, buf = auditFixture(t, interceptors.AuditResults())
	icRun(t, testutil.Session(t, tk, "s"), testutil.Call("c1", "echo", `{"text":"`+strings.Repeat("x", 10000)+`"}`))
	if r := buf.lines(t)[0]["result"].(string); len(r) != interceptors.DefaultAuditMaxBytes+len("…") {
		t.Fatalf("default bound: %d bytes", len(r))
	}
}
