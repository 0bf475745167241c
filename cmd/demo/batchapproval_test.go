package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolstream/toolstream/internal/testutil"
)

// TestDemoBatchApproval runs the scripted tour with -approve-batches: the
// turn with write_note asks once for its whole batch before any of its
// calls runs, the scripted agent approves the batch with the title edited,
// and the tour ends as usual.
func TestDemoBatchApproval(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once", "-session", "tour-batch", "-approve-batches"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{
		"(the whole batch; asks about call_6: write_note) asks: 1 call of a batch of 6 need approval",
		"by the scripted agent, for the whole batch (title edited to demo-summary)",
		"demo-summary.md:\n",
		"=== Summary: 6 turns, 13 calls", "states: 1 interrupted, 10 success, 2 error",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "approval call_6") {
		t.Error("write_note was asked about again, on its own")
	}
	// Nothing of the batch ran before the approval.
	ask := strings.Index(s, "(the whole batch;")
	if first := strings.Index(s, "[call_1] count_lines ->"); ask < 0 || first < ask {
		t.Errorf("a call of the batch finished before the batch was approved")
	}
}

// TestBrowserBatchApproval: with -approve-batches, the page shows one
// approval box for the whole batch of the turn with write_note; while it
// waits none of the batch's calls has run; one click on Approve runs them
// all.
func TestBrowserBatchApproval(t *testing.T) {
	testutil.Long(t)
	chrome := findChromium(t)
	if testing.Short() {
		t.Skip("drives a browser")
	}
	ctx, cancelBrowser, checkPageErrors := newBrowser(t, chrome)
	defer cancelBrowser()
	defer checkPageErrors()

	demo := startDemo(t, "--dir", "../..", "--approve", "page", "--approve-batches", "--speed", "0", "--session", "browser-batch", "--once=false")
	defer demo.Stop()
	addr := demo.addr
	failed := demo.Failed
	waitForPage(t, "http://"+addr+"/api/info", failed)
	if err := pageDo(ctx, 60*time.Second, chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	w := &watcher{t: t, ctx: ctx, failed: failed, width: map[string]float64{}, streaming: map[string]bool{}}
	snap := w.until("one approval box for the batch", 60*time.Second, func(s pageSnap) bool { return s.approvable("write_note") != "" })
	id := snap.approvable("write_note")
	if !strings.HasPrefix(id, "batch-") {
		t.Fatalf("the approval box is on %q, not on the batch", id)
	}
	for _, c := range snap.Cards {
		if c.ID == "call_1" || c.ID == "call_6" {
			if c.State != "queued" && c.State != "waiting" {
				t.Fatalf("%s is %s while its batch waits for approval", c.ID, c.State)
			}
		}
	}
	if err := pageDo(ctx, 30*time.Second, chromedp.Click(chromedp.CSS(fmt.Sprintf(".call[data-call=%q] .approval button.approve", id)))); err != nil {
		t.Fatalf("clicking Approve: %v", err)
	}
	w.until("write_note and the batch succeeding after one approval", 60*time.Second, func(s pageSnap) bool {
		note, ok1 := s.card("call_6")
		batch, ok2 := s.card(id)
		if ok1 && note.State != "queued" && note.State != "waiting" && note.State != "running" && note.State != "success" {
			t.Fatalf("write_note ended %s: %s", note.State, note.Text)
		}
		return ok1 && ok2 && note.State == "success" && batch.State == "success" && s.approvable("write_note") == ""
	})
}
