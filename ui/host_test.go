package ui_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/ui"
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

// TestHostAuthorize: a route of the application's own asks the host's hook
// through Authorize; a refusal names the thread and wraps the hook's
// error, so that ErrUnauthenticated tells 401 from 403.
func TestHostAuthorize(t *testing.T) {
	hook := func(r *http.Request, a ui.Access) error {
		switch {
		case r.Header.Get("Authorization") == "":
			return fmt.Errorf("%w: no token", ui.ErrUnauthenticated)
		case a.Action != ui.ActionRead:
			return errors.New("read only")
		}
		return nil
	}
	a := uitest.New(t, ui.WithAuthorize(hook))
	r := httptest.NewRequest(http.MethodPost, "/stop", nil)
	if err := a.Host.Authorize(r, ui.Access{Thread: "t1", Action: ui.ActionRun}); !errors.Is(err, ui.ErrUnauthenticated) || !strings.Contains(err.Error(), `"t1"`) {
		t.Errorf("no token: %v, want ErrUnauthenticated naming the thread", err)
	}
	r.Header.Set("Authorization", "Bearer ana")
	if err := a.Host.Authorize(r, ui.Access{Thread: "t1", Action: ui.ActionRead}); err != nil {
		t.Errorf("an allowed read: %v", err)
	}
	if err := a.Host.Authorize(r, ui.Access{Thread: "t1", Action: ui.ActionRead}, ui.Access{Thread: "t1", Action: ui.ActionRun}); err == nil || errors.Is(err, ui.ErrUnauthenticated) || !strings.Contains(err.Error(), "read only") {
		t.Errorf("a refused run after an allowed read: %v, want the hook's refusal (403)", err)
	}
}
