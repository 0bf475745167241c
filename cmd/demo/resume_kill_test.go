//go:build unix

package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
)

// TestDemoResumesAfterKill: the demo's process killed outright (SIGKILL,
// no clean stop) while turn 5's call runs is started again with the same
// -store and -session: it resumes from the conversation saved when turn
// 5's calls started, answers that turn's call (the finished calls of
// turns 1 to 4 are not asked for or run again) and finishes the tour.
func TestDemoResumesAfterKill(t *testing.T) {
	testutil.Long(t)
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-once", "-plain", "-speed", "4", "-store", store, "-session", "killed"}
	cmd := exec.Command(bin, args...)
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
	case <-out.when("=== Turn 5"):
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("turn 5 never came:\n%s", out)
	}
	time.Sleep(100 * time.Millisecond) // watch_folder runs (the user would stop it at 375 ms)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-read
	_ = cmd.Wait()

	again, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the second run: %v\n%s", err, again)
	}
	s := string(again)
	for _, want := range []string{"=== Session killed resumes after turn 5", "turn 5's 1 unanswered calls answered", "=== Turn 6: the model answers", "=== Summary"} {
		if !strings.Contains(s, want) {
			t.Errorf("second run lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"=== Turn 1", "=== Turn 4", "approval call_6"} {
		if strings.Contains(s, not) {
			t.Errorf("second run repeats %q:\n%s", not, s)
		}
	}
}
