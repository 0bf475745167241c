package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
)

// TestDemoResumesAfterRestart: a tour whose process stops in the middle of
// turn 5 (its store kept in a folder, -store) runs again with the same
// session and finishes: the model is not asked for turns 1 to 5 again, no
// finished call runs again, and the saved conversation goes on to the
// answer. A third start finds the run over.
func TestDemoResumesAfterRestart(t *testing.T) {
	testutil.Long(t)
	store := t.TempDir()
	args := []string{"-listen", "", "-nats-listen", "", "-once", "-plain", "-speed", "1", "-store", store, "-session", "resumed", "-dir", "../.."}

	// First process: stopped while turn 5's long call runs.
	var out1, err1 testutil.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- run(ctx, args, &out1, &err1) }()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(out1.String(), "=== Turn 5") {
		select {
		case err := <-exited:
			t.Fatalf("the first run ended before turn 5: %v\n%s", err, out1.String())
		case <-deadline:
			t.Fatalf("no turn 5 within 60 s:\n%s", out1.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-exited; err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}

	// Second process: resumes after turn 5 and answers.
	var out2, err2 testutil.SyncBuffer
	if err := run(context.Background(), args, &out2, &err2); err != nil {
		t.Fatalf("second run: %v\n%s\n%s", err, out2.String(), err2.String())
	}
	s := out2.String()
	for _, want := range []string{"=== Session resumed resumes after turn 5", "=== Turn 6: the model answers", "Done. Mostly Go"} {
		if !strings.Contains(s, want) {
			t.Errorf("second run lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"=== Turn 1", "=== Turn 3", "=== Turn 5", "approval call_6"} {
		if strings.Contains(s, not) {
			t.Errorf("second run repeats %q:\n%s", not, s)
		}
	}

	// Third process: the run is over.
	var out3, err3 testutil.SyncBuffer
	if err := run(context.Background(), args, &out3, &err3); err != nil {
		t.Fatalf("third run: %v\n%s", err, err3.String())
	}
	if !strings.Contains(out3.String(), "its saved run is over (6 turns)") {
		t.Errorf("third run:\n%s", out3.String())
	}
}
