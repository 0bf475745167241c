//go:build unix

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDemoResumesAfterKill: the demo's process killed outright (SIGKILL,
// no clean stop) while turn 5's call runs is started again with the same
// -store and -session: it resumes from the conversation saved when turn
// 5's calls started, answers that turn's call (the finished calls of
// turns 1 to 4 are not asked for or run again) and finishes the tour.
func TestDemoResumesAfterKill(t *testing.T) {
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	// Flat out on a small folder: the kill comes when turn 5's call has
	// started, which then runs until the user's stop at 1.5 s.
	args := []string{"-dir", ".", "-listen", "", "-once", "-plain", "-speed", "0", "-store", store, "-session", "killed"}
	natsAddr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"-nats-listen", natsAddr}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &lineWatcher{}
	read := make(chan struct{})
	go func() { out.read(stdout); close(read) }()
	select {
	case <-out.when("start       call_10"): // watch_folder runs
	case <-read:
		_ = cmd.Wait()
		t.Fatalf("the demo ended before turn 5's call started:\n%s", out)
	}
	// The conversation is saved as the turn's calls start, beside them:
	// the kill comes once the bucket holds it with turn 5's call.
	if err := waitSavedCall(natsAddr, "killed", "call_10"); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("%v\n%s", err, out)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-read
	_ = cmd.Wait()

	again, err := exec.Command(bin, append([]string{"-nats-listen", ""}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the second run: %v\n%s", err, again)
	}
	s := string(again)
	for _, want := range []string{"=== Session killed resumes after turn 5", "as it was: tool groups files, notes; skills file-analysis",
		"turn 5's 1 unanswered calls answered", "=== Turn 6: the model answers", "=== Summary"} {
		if !strings.Contains(s, want) {
			t.Errorf("second run lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"=== Turn 1", "=== Turn 4", "approval call_6", "which is not active"} {
		if strings.Contains(s, not) {
			t.Errorf("second run repeats %q:\n%s", not, s)
		}
	}
}
