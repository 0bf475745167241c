package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/ui/internal/thread"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// TestHostCancel: Host.Cancel ends the run going on in a thread (a stop
// button's route) and leaves the thread, whose next request runs; on an
// id the host has no thread for, it does nothing.
func TestHostCancel(t *testing.T) {
	a := uitest.New(t)
	a.Host.Cancel("none") // no thread: nothing happens
	th, err := a.Threads.Thread("c")
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id, text string) thread.Input {
		return thread.Input{Messages: []thread.IDMessage{{ID: id, Message: agent.UserText(text)}}}
	}
	l, err := th.Begin(msg("u1", "gate")) // waits on the gate, which stays shut
	if err != nil {
		t.Fatal(err)
	}
	a.Host.Cancel("c")
	if end := readEnd(t, l); end.Kind != thread.EndError || end.Error == nil || !end.Error.Canceled {
		t.Fatalf("the cancelled run ended with %+v, want a cancelled run_error", end)
	}
	if l, err = th.Begin(msg("u2", "hi")); err != nil {
		t.Fatalf("the thread after Cancel: %v", err)
	}
	if end := readEnd(t, l); end.Kind != thread.EndAnswer {
		t.Fatalf("the run after Cancel ended with %+v", end)
	}
}

// readEnd reads a response to its end.
func readEnd(t *testing.T, l *thread.Log) *thread.End {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; ; {
		evs, end, err := l.Next(ctx, i)
		if err != nil {
			t.Fatalf("the response did not end: %v", err)
		}
		i += len(evs)
		if end != nil {
			return end
		}
	}
}
