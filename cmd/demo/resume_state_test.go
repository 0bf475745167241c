package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/internal/testutil"
)

// TestDemoResumedSessionAsItWas: a run stopped while turn 4's calls run
// (after reset_tools switched the notes group on and the skill switched
// the files group on) resumes with the session as it was: its groups and
// its loaded skill. Before, they lived in memory only: the resumed turn
// 4's calls failed with `tool "folder_stats" is in the tool group "files",
// which is not active`, and turn 5 was offered 6 tools instead of 11.
func TestDemoResumedSessionAsItWas(t *testing.T) {
	store := t.TempDir()
	args := []string{"-listen", "", "-nats-listen", "", "-once", "-plain", "-speed", "0", "-store", store, "-session", "asitwas", "-dir", "."}

	// Stopped once turn 4's calls have started (its conversation is saved
	// then), while folder_stats is retried.
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	out1 := &lineWatcher{}
	read := make(chan struct{})
	go func() { out1.read(pr); close(read) }()
	exited := make(chan error, 1)
	go func() {
		var stderr testutil.SyncBuffer
		err := run(ctx, args, pw, &stderr)
		pw.Close()
		exited <- err
	}()
	select {
	case <-out1.when("start       call_7"):
	case err := <-exited:
		t.Fatalf("the first run ended before turn 4's calls: %v\n%s", err, out1)
	}
	cancel()
	if err := <-exited; !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	<-read

	var out2, err2 testutil.SyncBuffer
	if err := run(context.Background(), args, &out2, &err2); err != nil {
		t.Fatalf("second run: %v\n%s\n%s", err, out2.String(), err2.String())
	}
	s := out2.String()
	for _, want := range []string{
		"=== Session asitwas resumes after turn 4",
		"as it was: tool groups files, notes; skills file-analysis",
		"=== Turn 5", "Done. Mostly Go",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("second run lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "which is not active") {
		t.Errorf("a resumed call found its group switched off:\n%s", s)
	}
	if m := regexp.MustCompile(`(?m)^=== Turn 5.*\n\s*offered: (.*)$`).FindStringSubmatch(s); m == nil || len(strings.Split(m[1], ", ")) != 11 {
		t.Errorf("turn 5 should be offered the 11 tools of the session as it was:\n%s", s)
	}
}

// TestDemoResumedSessionKeepsGrants: an "always allow" given on the page
// (write_note, in turn 3) is kept in the store; the run stopped in turn 5
// resumes with it. Before, grants lived in the process only.
func TestDemoResumedSessionKeepsGrants(t *testing.T) {
	store := t.TempDir()
	web := freeAddr(t)
	args := []string{"-listen", web, "-approve", "page", "-once", "-plain", "-speed", "0", "-store", store, "-session", "grants", "-dir", "."}
	natsAddr := freeAddr(t)
	first := runPiped(t, append([]string{"-nats-listen", natsAddr}, args...)...)
	first.wait(t, "waiting for an answer on the web page")
	resp, err := http.Post("http://"+web+"/api/approve", "application/json",
		strings.NewReader(`{"session":"grants","call":"call_6","approve":true,"always":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approving on the page: %s", resp.Status)
	}
	first.wait(t, "start       call_10")
	if err := waitSavedCall(natsAddr, "grants", "call_10"); err != nil {
		t.Fatalf("%v\n%s", err, first.out)
	}
	if err := first.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}

	second := runPiped(t, append([]string{"-nats-listen", ""}, args...)...)
	second.wait(t, "=== Summary")
	if s := second.out.String(); !strings.Contains(s, "as it was: tool groups files, notes; skills file-analysis; allowed for the session write_note") {
		t.Errorf("the resumed session lacks its grant:\n%s", s)
	}
}
