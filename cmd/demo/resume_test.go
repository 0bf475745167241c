package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/internal/testutil"
)

// TestDemoResumesAfterRestart: a tour whose process stops in the middle of
// turn 5 (its store kept in a folder, -store) runs again with the same
// session and finishes: the model is not asked for turns 1 to 5 again, no
// finished call runs again, and the saved conversation goes on to the
// answer. A third start finds the run over.
func TestDemoResumesAfterRestart(t *testing.T) {
	store := t.TempDir()
	args := []string{"-listen", "", "-once", "-plain", "-speed", "0", "-store", store, "-session", "resumed", "-dir", "."}

	// First process: stopped while turn 5's long call runs, once the
	// conversation saved as its calls started is in the bucket.
	natsAddr := freeAddr(t)
	first := runPiped(t, append([]string{"-nats-listen", natsAddr}, args...)...)
	first.wait(t, "start       call_10")
	if err := waitSavedCall(natsAddr, "resumed", "call_10"); err != nil {
		t.Fatalf("%v\n%s", err, first.out)
	}
	if err := first.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	args = append([]string{"-nats-listen", ""}, args...)

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
