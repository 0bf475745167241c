package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// TestBrowser drives the demo's live page in headless Chromium while the
// scripted run goes on: progress bars move, results stream, an approval is
// given on the page, and a reload in the middle of the run rebuilds the
// page from the replayed events.
func TestBrowser(t *testing.T) {
	testutil.Long(t)
	chrome := findChromium(t)
	if testing.Short() {
		t.Skip("drives a browser for about half a minute")
	}

	// The browser first: the scripted run starts with the demo, and the page
	// must watch it live, however long Chromium takes to start.
	ctx, cancelBrowser, checkPageErrors := newBrowser(t, chrome)
	defer cancelBrowser()
	defer checkPageErrors()

	// The demo, in process, on a free port.
	demo := startDemo(t, "--dir", "../..", "--approve", "page", "--speed", "0.5", "--session", "browser", "--once=false")
	defer demo.Stop()
	base := demo.URL()
	demoFailed := demo.Failed
	waitForPage(t, base+"/api/info", demoFailed)

	start := time.Now()
	if err := pageDo(ctx, 60*time.Second, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	if err := pageDo(ctx, 60*time.Second, chromedp.WaitVisible(chromedp.CSS("#status"))); err != nil {
		t.Fatalf("the page has no status: %v", err)
	}

	w := &watcher{t: t, ctx: ctx, failed: demoFailed, width: map[string]float64{}, streaming: map[string]bool{}}

	// (c) The approval box of write_note shows the suggested rules as
	// buttons: approve with "always allow write_note in this session".
	snap := w.until("an approval box for write_note", 60*time.Second, func(s pageSnap) bool {
		return s.approvable("write_note") != ""
	})
	note := snap.approvable("write_note")
	t.Logf("%v: approval box for %s; progress seen: %v, streaming seen: %v", time.Since(start).Round(time.Millisecond), note, w.progress != "", w.streamed != "")
	card, _ := snap.card(note)
	const wantLabel = "Always allow write_note in this session"
	suggestion := ""
	var labels []string
	for _, s := range card.Suggestions {
		id, label, _ := strings.Cut(s, "|")
		labels = append(labels, label)
		if label == wantLabel {
			suggestion = id
		}
	}
	if suggestion == "" || !slices.Contains(labels, "Allow write_note again with exactly these arguments") {
		t.Fatalf("the approval box offers %q, want %q and the exact call", labels, wantLabel)
	}
	accept := chromedp.CSS(fmt.Sprintf(".call[data-call=%q] .approval button.suggestion[data-suggestion=%q]", note, suggestion))
	if err := pageDo(ctx, 30*time.Second, chromedp.Click(accept)); err != nil {
		t.Fatalf("clicking the suggestion: %v", err)
	}
	done := w.until(note+" succeeding after the approval", 60*time.Second, func(s pageSnap) bool {
		c, ok := s.card(note)
		if ok && c.State != "running" && c.State != "waiting" && c.State != "success" {
			t.Fatalf("%s ended %s after the approval; result: %s", note, c.State, c.Text)
		}
		return ok && c.State == "success" && c.Approval != ""
	})
	if c, _ := done.card(note); c.Approval != "Approved: allowed for the rest of the session: write_note" {
		t.Errorf("the decided approval says %q", c.Approval)
	}

	// (d) Reload in the middle of the run.
	before := w.sample()
	if before.Final != "" {
		t.Errorf("the run was over before the reload (too fast for a mid-run reload): %q", before.Final)
	}
	if err := pageDo(ctx, 60*time.Second, chromedp.Reload()); err != nil {
		t.Fatalf("reloading: %v", err)
	}
	w.reloaded()
	t.Logf("%v: reloaded with %d calls on the page", time.Since(start).Round(time.Millisecond), len(before.Cards))
	w.until("every call back after the reload, with the groups and skills", 60*time.Second, func(s pageSnap) bool {
		for _, b := range before.Cards {
			a, ok := s.card(b.ID)
			if !ok || !notEarlier(a.State, b.State) {
				return false
			}
		}
		return slices.Contains(s.Groups, "notes") && slices.Contains(s.Groups, "files") && slices.Contains(s.Skills, "file-analysis")
	})
	after := w.until("the final answer", 60*time.Second, func(s pageSnap) bool { return s.Final != "" })
	t.Logf("%v: done: %q", time.Since(start).Round(time.Millisecond), after.Final)
	after = w.until("every call finished after done", 10*time.Second, func(s pageSnap) bool {
		for _, c := range s.Cards {
			if !isFinalState(c.State) {
				return false
			}
		}
		return true
	})
	if len(after.Cards) < len(before.Cards) {
		t.Errorf("%d calls on the page after the reload, %d before", len(after.Cards), len(before.Cards))
	}
	for _, b := range before.Cards {
		a, _ := after.card(b.ID)
		if !notEarlier(a.State, b.State) {
			t.Errorf("call %s was %s before the reload and is %s after it", b.ID, b.State, a.State)
		}
	}
	for _, c := range after.Cards {
		if c.Badge != c.State {
			t.Errorf("call %s: badge %q, data-state %q", c.ID, c.Badge, c.State)
		}
	}
	if c, _ := after.card(note); c.State != "success" {
		t.Errorf("%s is %s at the end, want success", note, c.State)
	}
	if after.Status != "live" {
		t.Errorf("connection status %q at the end, want live", after.Status)
	}
	// The context policy's cut, drawn from its context_cut event (after the
	// reload, so from the replay): turn 6 says what its request left out,
	// and the cards of turn 1's calls say that they are out of context.
	type cutSnap struct {
		Line   string   `json:"line"`
		Badges []string `json:"badges"`
	}
	cut, err := pageRun(ctx, 10*time.Second, chromedp.Evaluate[cutSnap](`({
		line: (document.querySelector('section[data-turn="6"] .context-cut:not([hidden])') || {}).textContent || '',
		badges: ['call_q', 'call_0', 'call_1'].map((id) => {
			const b = document.querySelector('article[data-call="' + id + '"] .cut-badge');
			return b && !b.hidden ? b.textContent : '';
		}),
	})`))
	if err != nil {
		t.Fatalf("reading the context cut: %v", err)
	}
	if !strings.HasPrefix(cut.Line, "Context cut: 3 of 19 messages left out, 3 of them summarized.") ||
		!slices.Equal(cut.Badges, []string{"out of context from turn 6", "out of context from turn 6", ""}) {
		t.Errorf("the page shows the context cut as %q, the cards' badges %q", cut.Line, cut.Badges)
	}

	// (a) and (b), seen at any time of the run.
	if w.progress == "" {
		t.Error("no progress bar was seen growing between 0% and 100%")
	} else {
		t.Logf("progress: %s", w.progress)
	}
	if w.streamed == "" {
		t.Errorf("no result was seen streaming into a running call that then succeeded (streaming seen on %v)", sortedKeys(w.streaming))
	} else {
		t.Logf("streaming: %s", w.streamed)
	}

	// The picture, for the README: a JPEG, or a PNG when the file name
	// says so (quality 100 makes Chromium write PNG).
	path := os.Getenv("TOOLSTREAM_SCREENSHOT")
	quality := 90
	if strings.HasSuffix(strings.ToLower(path), ".png") {
		quality = 100
	}
	if err := pageDo(ctx, 10*time.Second, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatalf("scrolling to the top: %v", err)
	}
	shot, err := pageRun(ctx, 60*time.Second, chromedp.FullScreenshot(quality))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if path != "" {
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Errorf("writing the screenshot: %v", err)
		} else {
			t.Logf("screenshot (%d bytes) written to %s", len(shot), path)
		}
	}
	t.Logf("%v in the browser, %d samples of the page", time.Since(start).Round(time.Millisecond), w.samples)

	// Close the browser before the demo, so that the page's event stream
	// ends first.
	cancelBrowser()
	demo.Stop()
}

// newBrowser starts headless Chromium. Any exception or console error of
// the page is kept, and checkErrors fails the test with them.
func newBrowser(t *testing.T, chrome string) (ctx context.Context, cancel func(), checkErrors func()) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1360, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	cancel = func() { cancelBrowser(); cancelAlloc() }

	var mu sync.Mutex
	var pageErrors []string
	if err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + exceptionText(ev.ExceptionDetails)
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			var parts []string
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, string(a.Value))
				}
			}
			msg = "console.error: " + strings.Join(parts, " ")
		default:
			return
		}
		mu.Lock()
		pageErrors = append(pageErrors, msg)
		mu.Unlock()
	}); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", chrome, err)
	}
	if err := pageDo(ctx, 60*time.Second, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", chrome, err)
	}
	checkErrors = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range pageErrors {
			t.Errorf("the page threw: %s", e)
		}
		pageErrors = nil
	}
	return ctx, cancel, checkErrors
}

// pageSnap is what the test reads from the page.
type pageSnap struct {
	Cards  []cardSnap `json:"cards"`
	Groups []string   `json:"groups"`
	Skills []string   `json:"skills"`
	Turns  []string   `json:"turns"`
	Final  string     `json:"final"`
	Status string     `json:"status"`
}

type cardSnap struct {
	ID      string  `json:"id"`
	Tool    string  `json:"tool"`
	State   string  `json:"state"`
	Badge   string  `json:"badge"`
	Width   float64 `json:"width"` // of the progress bar, in %; -1 without one
	Text    string  `json:"text"`  // the start of the result
	TextLen int     `json:"textLen"`
	Approve bool    `json:"approve"` // an Approve button is there
	// Suggestions are the suggested rules' buttons, "id|label".
	Suggestions []string `json:"suggestions"`
	// Approval is what a decided approval box says.
	Approval string `json:"approval"`
}

const snapJS = `(() => {
	const text = (sel) => { const e = document.querySelector(sel); return e ? e.textContent : ''; };
	return {
		cards: [...document.querySelectorAll('.call[data-call]')].map((c) => {
			const bar = c.querySelector('.bar');
			const res = c.querySelector('.result');
			const w = bar && bar.style.width ? parseFloat(bar.style.width) : -1;
			const t = res ? res.textContent : '';
			return {
				id: c.dataset.call,
				tool: (c.querySelector('.tool') || {}).textContent || '',
				state: c.dataset.state || '',
				badge: (c.querySelector('.state') || {}).textContent || '',
				width: Number.isFinite(w) ? w : -1,
				text: t.slice(0, 200),
				textLen: t.length,
				approve: !!c.querySelector('.approval button.approve'),
				suggestions: [...c.querySelectorAll('.approval button.suggestion')].map((b) => b.dataset.suggestion + '|' + b.textContent),
				approval: (c.querySelector('.approval.decided .approval-title') || {}).textContent || '',
			};
		}),
		groups: [...document.querySelectorAll('#groups li')].map((e) => e.textContent.trim()),
		skills: [...document.querySelectorAll('#skills [data-skill]')].map((e) => e.dataset.skill),
		turns: [...document.querySelectorAll('.turn[data-turn]')].map((e) => e.dataset.turn),
		final: text('#final').trim(),
		status: (document.querySelector('#status') || {}).dataset?.status || '',
	};
})()`

func (s pageSnap) card(id string) (cardSnap, bool) {
	for _, c := range s.Cards {
		if c.ID == id {
			return c, true
		}
	}
	return cardSnap{}, false
}

// approvable is the id of a call of tool with an Approve button.
func (s pageSnap) approvable(tool string) string {
	for _, c := range s.Cards {
		if c.Tool == tool && c.Approve {
			return c.ID
		}
	}
	return ""
}

func (s pageSnap) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %q, turns %v, groups %v, skills %v, final %q\n", s.Status, s.Turns, s.Groups, s.Skills, s.Final)
	for _, c := range s.Cards {
		fmt.Fprintf(&b, "  %-8s %-24s %-11s bar %5.1f  approve %-5v result %d bytes: %q\n", c.ID, c.Tool, c.State, c.Width, c.Approve, c.TextLen, clipRunes(c.Text, 60))
	}
	return b.String()
}

// watcher samples the page every 50 ms and keeps what it saw over time.
type watcher struct {
	t       *testing.T
	ctx     context.Context
	failed  func() string
	samples int

	width     map[string]float64 // the last bar width of each running call
	progress  string             // how a bar was seen growing
	streaming map[string]bool    // calls seen running with some result text
	streamed  string             // one of those, later seen succeeding
}

func (w *watcher) sample() pageSnap {
	w.t.Helper()
	s, err := pageRun(w.ctx, 10*time.Second, chromedp.Evaluate[pageSnap](snapJS))
	if err != nil {
		w.t.Fatalf("reading the page: %v", err)
	}
	w.samples++
	for _, c := range s.Cards {
		if c.State == "running" && c.Width > 0 && c.Width < 100 {
			if prev, ok := w.width[c.ID]; ok && prev < c.Width && w.progress == "" {
				w.progress = fmt.Sprintf("%s (%s) went from %.1f%% to %.1f%%", c.ID, c.Tool, prev, c.Width)
			}
			w.width[c.ID] = c.Width
		} else {
			delete(w.width, c.ID)
		}
		if c.State == "running" && c.TextLen > 0 {
			w.streaming[c.ID] = true
		}
		if c.State == "success" && w.streaming[c.ID] && w.streamed == "" {
			w.streamed = fmt.Sprintf("%s (%s) showed result text while running, then succeeded", c.ID, c.Tool)
		}
	}
	return s
}

// reloaded forgets the bar widths of the page before.
func (w *watcher) reloaded() { clear(w.width) }

// until samples the page until cond holds, and fails the test after timeout.
func (w *watcher) until(what string, timeout time.Duration, cond func(pageSnap) bool) pageSnap {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := w.sample()
		if cond(s) {
			return s
		}
		if msg := w.failed(); msg != "" {
			w.t.Fatalf("waiting for %s: %s\nthe page:\n%s", what, msg, s)
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no %s within %v; the page:\n%s", what, timeout, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var stateRank = map[string]int{"": 0, "queued": 1, "running": 2, "waiting": 2}

func isFinalState(state string) bool {
	_, open := stateRank[state]
	return !open
}

// notEarlier says whether a call's state after is the same as before or
// one that can follow it.
func notEarlier(after, before string) bool {
	if isFinalState(before) {
		return after == before
	}
	return isFinalState(after) || stateRank[after] >= stateRank[before]
}

func pageDo(ctx context.Context, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

func pageRun[T any](ctx context.Context, timeout time.Duration, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// findChromium returns the browser to drive: $CHROMIUM, or the first of
// the usual names found. Without one the test is skipped, except on CI.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found ($CHROMIUM, /usr/bin/chromium, chromium, chromium-browser, google-chrome); CI must install it")
	}
	t.Skip("no Chromium found: set $CHROMIUM to run the browser test")
	return ""
}

// waitHTTP polls url until it answers 200.
func waitForPage(t *testing.T, url string, failed func() string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if msg := failed(); msg != "" {
			t.Fatalf("waiting for %s: %s", url, msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not come up at %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", s, d.URL, d.LineNumber+1, d.ColumnNumber+1)
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestBrowserLargeResult: a result of many MiB (larger than one NATS
// message: text cut into several deltas, a JSON part in chunks, a result
// that omits its content) is rebuilt by the page from its deltas, live and
// after a reload: the page keeps it whole, shows only its start, and never
// freezes while it comes in.
func TestBrowserLargeResult(t *testing.T) {
	testutil.Long(t)
	chrome := findChromium(t)
	if testing.Short() {
		t.Skip("drives a browser")
	}
	const mib = 8
	// What export_table returns, computed here the same way.
	want := expectedLarge(t, mib)

	ctx, cancelBrowser, checkPageErrors := newBrowser(t, chrome)
	defer cancelBrowser()
	defer checkPageErrors()

	demo := startDemo(t, "--dir", "../..", "--speed", "4", "--session", "large", "--once=false", "--large-result", fmt.Sprint(mib))
	defer func() {
		cancelBrowser()
		demo.Stop()
	}()
	base := demo.URL()
	failed := demo.Failed
	waitForPage(t, base+"/api/info", failed)

	for _, phase := range []string{"live", "after a reload"} {
		if phase == "live" {
			if err := pageDo(ctx, 60*time.Second, chromedp.Navigate(base+"/?session=large")); err != nil {
				t.Fatalf("opening the page: %v", err)
			}
		} else if err := pageDo(ctx, 60*time.Second, chromedp.Reload()); err != nil {
			t.Fatalf("reloading: %v", err)
		}
		// Long tasks (over 50 ms) of the page's main thread, from now on.
		if err := pageDo(ctx, 10*time.Second, chromedp.Evaluate[chromedp.Void](`window.__longest = 0;
			new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longest = Math.max(window.__longest, e.duration); })
				.observe({ type: 'longtask', buffered: true });`)); err != nil {
			t.Fatalf("watching long tasks: %v", err)
		}
		deadline := time.Now().Add(120 * time.Second)
		var got largeSnap
		for {
			s, err := pageRun(ctx, 20*time.Second, chromedp.Evaluate[largeSnap](largeJS, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("%s: reading the page: %v", phase, err)
			}
			if s.State == "success" {
				got = s
				break
			}
			if msg := failed(); msg != "" {
				t.Fatal(msg)
			}
			if time.Now().After(deadline) {
				page, _ := pageRun(ctx, 20*time.Second, chromedp.Evaluate[pageSnap](snapJS))
				checkPageErrors()
				t.Fatalf("%s: export_table is %q after 120s; the page:\n%s", phase, s.State, page)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("%s: %d characters shown, note %q; kept %d parts, text %d bytes (sha256 %.12s), %d rows; longest task %.0f ms",
			phase, got.Shown, got.Note, got.Parts, got.TextBytes, got.TextSHA, got.Rows, got.Longest)
		if !got.Omitted || got.Parts != 2 || got.TextBytes != len(want.text) || got.TextSHA != want.textSHA ||
			got.Rows != want.rows || got.LastRow != want.lastRow {
			t.Errorf("%s: the page rebuilt %+v; want 2 parts, %d bytes of text (sha256 %.12s), %d rows ending %s",
				phase, got, len(want.text), want.textSHA, want.rows, want.lastRow)
		}
		if got.Shown == 0 || got.Shown > 100000 || !strings.HasPrefix(want.text, got.Head) {
			t.Errorf("%s: %d characters shown, starting %q", phase, got.Shown, got.Head)
		}
		if !strings.Contains(got.Note, "Showing the first") || !strings.Contains(got.Note, "MiB rebuilt from the deltas") {
			t.Errorf("%s: the note under the result says %q", phase, got.Note)
		}
		if got.Longest > 2000 {
			t.Errorf("%s: the page froze for %.0f ms", phase, got.Longest)
		}
	}
}

type largeSnap struct {
	State     string  `json:"state"`
	Shown     int     `json:"shown"`
	Head      string  `json:"head"`
	Note      string  `json:"note"`
	Omitted   bool    `json:"omitted"`
	Parts     int     `json:"parts"`
	TextBytes int     `json:"textBytes"`
	TextSHA   string  `json:"textSHA"`
	Rows      int     `json:"rows"`
	LastRow   string  `json:"lastRow"`
	Longest   float64 `json:"longest"`
}

// largeJS reads the card of export_table and what the page keeps of its
// result (window.toolstream is the page's debugging handle).
const largeJS = `(async () => {
	const card = document.querySelector('.call[data-call="call_big"]');
	const S = window.toolstream.page.S;
	const c = S && S.calls.get('call_big');
	const out = { state: card ? card.dataset.state : '', longest: window.__longest || 0 };
	if (!card || !c || !c.result) return out;
	const pre = card.querySelector('.result');
	out.shown = pre.textContent.length;
	out.head = pre.textContent.slice(0, 200);
	const note = card.querySelector('.clip-note');
	out.note = note && !note.hidden ? note.textContent : '';
	out.omitted = c.result.content_omitted === true;
	const parts = c.content || [];
	out.parts = parts.length;
	const text = parts[0] && parts[0].type === 'text' ? parts[0].text : '';
	const bytes = new TextEncoder().encode(text);
	out.textBytes = bytes.length;
	const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
	out.textSHA = [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
	const rows = parts[1] && parts[1].type === 'json' && parts[1].json ? parts[1].json.rows : null;
	out.rows = Array.isArray(rows) ? rows.length : -1;
	out.lastRow = Array.isArray(rows) && rows.length ? JSON.stringify(rows[rows.length - 1]) : '';
	return out;
})()`

type largeWant struct {
	text, textSHA, lastRow string
	rows                   int
}

// expectedLarge runs export_table in a toolkit of its own.
func expectedLarge(t *testing.T, mib int) largeWant {
	t.Helper()
	tk := toolkit.New()
	defer tk.Close(context.Background())
	if err := tk.Add(largeTool(mib)); err != nil {
		t.Fatal(err)
	}
	s, err := tk.Session("expected")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run(context.Background(), []toolkit.Call{{ID: "x", Name: largeToolName}})[0]
	if r.State != events.StateSuccess || len(r.Content) != 2 {
		t.Fatalf("export_table: %s, %d parts", r.State, len(r.Content))
	}
	var v struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(r.Content[1].JSON, &v); err != nil || len(v.Rows) == 0 {
		t.Fatalf("export_table's JSON: %v", err)
	}
	sum := sha256.Sum256([]byte(r.Content[0].Text))
	// The last row as JSON.stringify writes it: Go's order of fields, without
	// the escapes of <, > and &.
	last := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(v.Rows[len(v.Rows)-1]))
	return largeWant{text: r.Content[0].Text, textSHA: hex.EncodeToString(sum[:]), rows: len(v.Rows), lastRow: last}
}
