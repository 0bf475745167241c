package interceptors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// evCheckDeltas fails unless the call's deltas add up to its result, both
// the result event's and the one returned.
func evCheckDeltas(t *testing.T, rec *testutil.Recorder, res toolkit.Result) {
	t.Helper()
	got, final := rec.Content(res.Call.ID), rec.Final(t, res.Call.ID)
	if a, b := events.ContentText(got), events.ContentText(final); a != b {
		t.Fatalf("deltas add up to %d bytes %q..., the result event has %d bytes %q...", len(a), evHead(a), len(b), evHead(b))
	}
	if a, b := events.ContentText(got), res.Text(); a != b {
		t.Fatalf("deltas add up to %q..., the result has %q...", evHead(a), evHead(b))
	}
}

func evHead(s string) string { return s[:min(len(s), 120)] }

type evIn struct {
	Lines int    `json:"lines"`
	Fail  string `json:"fail,omitempty"`
	Text  string `json:"text,omitempty"`
	Parts int    `json:"parts,omitempty"` // stream Text in this many deltas
}

// evKit returns a toolkit with the interceptors and two tools: "big"
// streams numbered lines and fails if asked; "echo" streams its text.
func evKit(t *testing.T, ics ...toolkit.Interceptor) (*toolkit.Toolkit, *testutil.Recorder) {
	t.Helper()
	rec := &testutil.Recorder{}
	tk := icKit(t, []toolkit.Option{toolkit.WithInlineObserver(rec)}, ics...)
	big := toolkit.MustTool(toolkit.Spec{Name: "big", Description: "Numbered lines."},
		func(ctx context.Context, in evIn) (string, error) {
			em := stream.From(ctx)
			for i := 1; i <= in.Lines; i++ {
				fmt.Fprintf(em, "line %d: %s\n", i, strings.Repeat("x", 50))
			}
			if in.Fail != "" {
				return "", errors.New(in.Fail)
			}
			return "done", nil
		})
	echo := toolkit.MustTool(toolkit.Spec{Name: "echo", Description: "Echo."},
		func(ctx context.Context, in evIn) (string, error) {
			if in.Parts <= 1 {
				return in.Text, nil
			}
			em := stream.From(ctx)
			step := (len(in.Text) + in.Parts - 1) / in.Parts
			for s := in.Text; s != ""; {
				n := min(step, len(s))
				em.Text(s[:n])
				s = s[n:]
			}
			return "", nil
		})
	testutil.Add(t, tk, big, echo)
	return tk, rec
}

func evCall(id, name string, in evIn) toolkit.Call {
	b, _ := json.Marshal(in)
	return toolkit.Call{ID: id, Name: name, Args: b}
}

func evRun(t *testing.T, tk *toolkit.Toolkit, session string, calls ...toolkit.Call) []toolkit.Result {
	t.Helper()
	sess, err := tk.Session(session)
	if err != nil {
		t.Fatal(err)
	}
	return sess.Run(context.Background(), calls)
}

// evFullText is what "big" produces for n lines.
func evFullText(n int, fail string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d: %s\n", i, strings.Repeat("x", 50))
	}
	if fail != "" {
		b.WriteString("Error: " + fail)
	} else {
		b.WriteString("done")
	}
	return b.String()
}

func evFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestEvictSmallResultUntouched(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	tk, rec := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(1000)))
	res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 3}))[0]
	if res.State != events.StateSuccess || res.Text() != evFullText(3, "") {
		t.Fatalf("got %s %q", res.State, res.Text())
	}
	evCheckDeltas(t, rec, res)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the folder should not even exist: %v", err)
	}
	if res.Meta[interceptors.EvictMetaLocation] != nil {
		t.Fatalf("meta: %v", res.Meta)
	}
}

func TestEvictLargeResult(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	tk, rec := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(4096),
		interceptors.EvictPreview(3, 20)))
	res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 500}))[0]
	full := evFullText(500, "")
	if res.State != events.StateSuccess || res.Err != nil {
		t.Fatalf("state %s, err %v", res.State, res.Err)
	}
	evCheckDeltas(t, rec, res)

	loc, _ := res.Meta[interceptors.EvictMetaLocation].(string)
	if filepath.Dir(loc) != dir {
		t.Fatalf("location %q is not in %s", loc, dir)
	}
	data, err := os.ReadFile(loc)
	if err != nil || string(data) != full {
		t.Fatalf("stored %d bytes (%v), want the %d bytes of the result", len(data), err, len(full))
	}
	if fi, _ := os.Stat(loc); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(dir); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode %v", fi.Mode().Perm())
	}
	if !strings.HasPrefix(filepath.Base(loc), "big-") || !strings.HasSuffix(loc, ".txt") {
		t.Fatalf("name %q", filepath.Base(loc))
	}
	msg := res.Text()
	for _, want := range []string{
		fmt.Sprintf("(%d bytes, 501 lines)", len(full)),
		"saved in full to " + loc + "\n",
		interceptors.DefaultEvictHint,
		"First 3 lines:\n     1\tline 1: xxxxxxxxxxxx [...]\n     2\tline 2: xxxxxxxxxxxx [...]\n     3\tline 3: xxxxxxxxxxxx [...]\n",
		"Last line (501):\n   501\tdone\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if len(msg) > 1000 {
		t.Errorf("message is %d bytes long", len(msg))
	}
	if res.Meta[interceptors.EvictMetaBytes] != len(full) {
		t.Errorf("meta: %v", res.Meta)
	}
	t.Logf("message:\n%s", msg)
}

func TestEvictErrorStaysError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	tk, rec := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(1024)))
	res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 100, Fail: "disk on fire"}))[0]
	if res.State != events.StateError || res.Err == nil || res.Err.Error() != "disk on fire" {
		t.Fatalf("state %s, err %v", res.State, res.Err)
	}
	evCheckDeltas(t, rec, res)
	if !strings.Contains(res.Text(), "\tError: disk on fire\n") {
		t.Fatalf("the last line should show the error:\n%s", res.Text())
	}
	loc, _ := res.Meta[interceptors.EvictMetaLocation].(string)
	if data, _ := os.ReadFile(loc); string(data) != evFullText(100, "disk on fire") {
		t.Fatalf("stored %q...", evHead(string(data)))
	}

	// Only successes: the failure is left alone.
	tk2, _ := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(1024), interceptors.EvictSuccessOnly()))
	res = evRun(t, tk2, "s", evCall("c1", "big", evIn{Lines: 100, Fail: "disk on fire"}))[0]
	if res.Text() != evFullText(100, "disk on fire") {
		t.Fatalf("a failure was evicted: %q...", evHead(res.Text()))
	}
}

func TestEvictSkippedTools(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	ic := interceptors.Evict(evictDir(dir), interceptors.EvictLimit(100))
	ic.Match = func(tool *toolkit.Tool) bool { return tool.Name() != "big" }
	tk, _ := evKit(t, ic)
	res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 10}), evCall("c2", "echo", evIn{Text: strings.Repeat("y", 200)}))
	if res[0].Text() != evFullText(10, "") {
		t.Fatalf("a skipped tool was evicted")
	}
	if !strings.Contains(res[1].Text(), "too large") {
		t.Fatalf("echo was not evicted: %q", res[1].Text())
	}
}

// evFailing is a backend that cannot store anything.
type evFailing struct{}

func (evFailing) Put(context.Context, string, []byte) (string, error) {
	return "", errors.New("bucket unavailable")
}

// evictDir is Evict's default backend in dir.
func evictDir(dir string) interceptors.EvictOption {
	return interceptors.EvictBackend(interceptors.DirBackend(dir, 1000, 256<<20))
}

func TestEvictStoreFailureTruncates(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]func(dir string) interceptors.EvictOption{
		"backend error":     func(string) interceptors.EvictOption { return interceptors.EvictBackend(evFailing{}) },
		"folder is a file":  func(string) interceptors.EvictOption { return evictDir(notDir) },
		"folder under file": func(string) interceptors.EvictOption { return evictDir(filepath.Join(notDir, "sub")) },
		"result over budget": func(dir string) interceptors.EvictOption {
			return interceptors.EvictBackend(interceptors.DirBackend(dir, 10, 100))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			tk, rec := evKit(t, interceptors.Evict(opt(dir), interceptors.EvictLimit(1000)))
			res := evRun(t, tk, "s", evCall("c1", "big", evIn{Lines: 100}), evCall("c2", "big", evIn{Lines: 100, Fail: "boom"}))
			full := evFullText(100, "")
			r := res[0]
			evCheckDeltas(t, rec, r)
			marker := fmt.Sprintf("\n[truncated: the full result (%d bytes) could not be stored: ", len(full))
			head, rest, ok := strings.Cut(r.Text(), marker)
			if !ok || !strings.HasSuffix(rest, "]\n") || len(head) != 1000 || !strings.HasPrefix(full, head) {
				t.Fatalf("got %q ... %q", evHead(r.Text()), rest)
			}
			if strings.Contains(r.Text(), "saved") || r.Meta[interceptors.EvictMetaLocation] != nil || r.Meta[interceptors.EvictMetaError] == nil {
				t.Fatalf("a pointer at nothing: %q, meta %v", r.Text(), r.Meta)
			}
			if name == "backend error" && !strings.Contains(rest, "bucket unavailable") {
				t.Fatalf("no reason: %q", rest)
			}
			// A failure keeps its state and its error line.
			r = res[1]
			evCheckDeltas(t, rec, r)
			if r.State != events.StateError || r.Err == nil || !strings.HasSuffix(r.Text(), "]\nError: boom") {
				t.Fatalf("failure: %s %v %q", r.State, r.Err, r.Text()[len(r.Text())-100:])
			}
			if len(r.Text()) > 1000+len(marker)+100 {
				t.Fatalf("failure not cut: %d bytes", len(r.Text()))
			}
		})
	}
}

func TestEvictNameIsSafe(t *testing.T) {
	long := strings.Repeat("../", 3500) // 10 KB
	hostile := []string{"", "../../etc/passwd", "/abs/path", `..\..\win`, "a\x00b", long, "ünïcødé/..", ".", "..", "c:\\x", "a/b/c"}
	seen := map[string]bool{}
	for _, id := range hostile {
		for _, tool := range []string{"count_lines", "../evil", "", "x\x00y/z", strings.Repeat("t", 1000), "ünï"} {
			name := interceptors.EvictFileName(tool, "nonce", "session", "run-1", id)
			if len(name) > 80 || name != filepath.Base(name) || strings.ContainsAny(name, "/\\\x00 :") ||
				strings.HasPrefix(name, ".") || strings.Contains(name, "..") || !strings.HasSuffix(name, ".txt") {
				t.Fatalf("EvictFileName(%q, %q) = %q", tool, evHead(id), name)
			}
		}
		seen[interceptors.EvictFileName("t", "nonce", "session", "run-1", id)] = true
	}
	if len(seen) != len(hostile) {
		t.Fatalf("%d ids gave %d names", len(hostile), len(seen))
	}
	if a, b := interceptors.EvictFileName("t", "ab", "c"), interceptors.EvictFileName("t", "a", "bc"); a == b {
		t.Fatal("ids are not kept apart")
	}
	if got := interceptors.EvictFileName("count_lines", "x"); !strings.HasPrefix(got, "count_lines-") || len(got) != len("count_lines-")+32+4 {
		t.Fatalf("name %q", got)
	}

	// Through the backend: every name lands in the folder.
	parent := t.TempDir()
	dir := filepath.Join(parent, "results")
	b := interceptors.DirBackend(dir, 0, 0)
	for _, id := range hostile {
		loc, err := b.Put(context.Background(), interceptors.EvictFileName("x", id), []byte(id))
		if err != nil || filepath.Dir(loc) != dir {
			t.Fatalf("Put: %q, %v", loc, err)
		}
	}
	if got := evFiles(t, parent); len(got) != 1 || got[0] != "results" {
		t.Fatalf("files outside the folder: %v", got)
	}
	// Put refuses names that are not plain.
	for _, name := range []string{"", "../x", "a/b", ".hidden", "a\x00b", strings.Repeat("n", 300), "a b"} {
		if _, err := b.Put(context.Background(), name, []byte("x")); err == nil {
			t.Errorf("Put(%q) was accepted", name)
		}
	}

	// Through the engine, with the most hostile ids it accepts.
	tk, _ := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(10)))
	long256 := strings.Repeat("../", 85)
	res := evRun(t, tk, "../../"+long256[:200], evCall("../../etc/passwd", "echo", evIn{Text: strings.Repeat("z", 20)}),
		evCall(long256, "echo", evIn{Text: strings.Repeat("z", 20)}), evCall("a/b\\c", "echo", evIn{Text: strings.Repeat("z", 20)}))
	for _, r := range res {
		loc, _ := r.Meta[interceptors.EvictMetaLocation].(string)
		if filepath.Dir(loc) != dir {
			t.Fatalf("call %q stored at %q", r.Call.ID, loc)
		}
	}
	if got := evFiles(t, parent); len(got) != 1 {
		t.Fatalf("files outside the folder: %v", got)
	}
}

func TestEvictSameCallIDInTwoRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	tk, _ := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(10)))
	a := evRun(t, tk, "s", evCall("call_0", "echo", evIn{Text: strings.Repeat("a", 20)}))[0]
	b := evRun(t, tk, "s", evCall("call_0", "echo", evIn{Text: strings.Repeat("b", 20)}))[0]
	la, lb := a.Meta[interceptors.EvictMetaLocation].(string), b.Meta[interceptors.EvictMetaLocation].(string)
	if la == lb {
		t.Fatal("a reused call id overwrote an earlier result")
	}
	if data, _ := os.ReadFile(la); string(data) != strings.Repeat("a", 20) {
		t.Fatalf("first result now reads %q", data)
	}
}

func TestEvictDoesNotFollowSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "results")
	victim := filepath.Join(parent, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := interceptors.DirBackend(dir, 0, 0)
	if _, err := b.Put(context.Background(), "first.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	name := interceptors.EvictFileName("t", "id")
	if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), name, []byte("result")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious" {
		t.Fatalf("the link was followed: victim reads %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the link is still there: %v %v", fi.Mode(), err)
	}

	// A folder that is a link, or that others may write to, is refused.
	link := filepath.Join(parent, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := interceptors.DirBackend(link, 0, 0).Put(context.Background(), "a.txt", []byte("x")); err == nil {
		t.Error("a folder that is a symbolic link was used")
	}
	open := filepath.Join(parent, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := interceptors.DirBackend(open, 0, 0).Put(context.Background(), "a.txt", []byte("x")); err == nil {
		t.Error("a folder anyone may write to was used")
	}
}

func TestEvictRetention(t *testing.T) {
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	put := func(t *testing.T, b interceptors.Backend, dir string, i, size int) {
		t.Helper()
		name := fmt.Sprintf("r%d.txt", i)
		if _, err := b.Put(ctx, name, []byte(strings.Repeat("x", size))); err != nil {
			t.Fatal(err)
		}
		// Distinct, increasing times, whatever the file system's resolution.
		at := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(dir, name), at, at); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("files", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "results")
		b := interceptors.DirBackend(dir, 3, 0)
		for i := range 6 {
			put(t, b, dir, i, 10)
		}
		// After the 6th write the 3 newest remain (the 6th's own time is set
		// after its clean-up, so it counts as newest then too).
		if got := strings.Join(evFiles(t, dir), ","); got != "r3.txt,r4.txt,r5.txt" {
			t.Fatalf("kept %s", got)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "results")
		b := interceptors.DirBackend(dir, 0, 250)
		for i := range 5 {
			put(t, b, dir, i, 100)
		}
		if got := strings.Join(evFiles(t, dir), ","); got != "r3.txt,r4.txt" {
			t.Fatalf("kept %s", got)
		}
		if _, err := b.Put(ctx, "huge.txt", make([]byte, 251)); err == nil {
			t.Fatal("a result over the byte limit was stored")
		}
		if got := strings.Join(evFiles(t, dir), ","); got != "r3.txt,r4.txt" {
			t.Fatalf("a refused result changed the folder: %s", got)
		}
	})
	t.Run("other files are kept", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "results")
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".keep"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		b := interceptors.DirBackend(dir, 1, 0)
		for i := range 3 {
			put(t, b, dir, i, 10)
		}
		if got := strings.Join(evFiles(t, dir), ","); got != ".keep,r2.txt,sub" {
			t.Fatalf("kept %s", got)
		}
	})
}

// Evict outside Sanitize: the stored result is redacted too, and so is
// the message (its preview goes through the sanitizer's delta filter).
func TestEvictWithSanitize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	tk, rec := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(100)),
		interceptors.Sanitize(interceptors.RedactEmails(), interceptors.SanitizeMaxBytes(0)))
	text := strings.Repeat("write to alice@example.com\n", 20)
	res := evRun(t, tk, "s", evCall("c", "echo", evIn{Text: text, Parts: 4}))[0]
	evCheckDeltas(t, rec, res)
	if strings.Contains(res.Text(), "alice") || !strings.Contains(res.Text(), "First 10 lines:\n     1\twrite to [redacted email]\n") {
		t.Fatalf("message:\n%s", res.Text())
	}
	loc, _ := res.Meta[interceptors.EvictMetaLocation].(string)
	data, err := os.ReadFile(loc)
	if err != nil || string(data) != strings.Repeat("write to [redacted email]\n", 20) {
		t.Fatalf("stored %q, %v", data, err)
	}
}

func TestEvictOneLongLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	tk, _ := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(100)))
	res := evRun(t, tk, "s", evCall("c", "echo", evIn{Text: strings.Repeat("é", 300)}))[0]
	want := "\nFirst line:\n     1\t" + strings.Repeat("é", 100) + " [...]\n"
	if !strings.HasSuffix(res.Text(), want) || !strings.Contains(res.Text(), "(600 bytes, 1 line)") {
		t.Fatalf("message:\n%s", res.Text())
	}
}

func TestEvictHint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	text := strings.Repeat("z", 200)
	for hint, want := range map[string]string{
		"Read it with read_result.": "It was saved in full to %s\nRead it with read_result.\n\nFirst line:\n",
		"":                          "It was saved in full to %s\n\nFirst line:\n", // no hint, no line
	} {
		tk, _ := evKit(t, interceptors.Evict(evictDir(dir), interceptors.EvictLimit(100), interceptors.EvictHint(hint)))
		res := evRun(t, tk, "s", evCall("c", "echo", evIn{Text: text}))[0]
		loc, _ := res.Meta[interceptors.EvictMetaLocation].(string)
		if !strings.Contains(res.Text(), fmt.Sprintf(want, loc)) || strings.Contains(res.Text(), interceptors.DefaultEvictHint) {
			t.Errorf("hint %q: message\n%s", hint, res.Text())
		}
	}
}
