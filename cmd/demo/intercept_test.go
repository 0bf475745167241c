package main

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// TestTerminalApprovals: with -approve terminal the person at the terminal
// answers: "y" lets the call run, "a" also allows the tool for the rest of
// the session, anything else rejects with that text as the reason.
func TestTerminalApprovals(t *testing.T) {
	// The view observes the toolkit, as in the demo: the desk's question
	// comes after the view showed the call's wait.
	var out syncBuffer
	view := newTermView(&out, false)
	tk := toolkit.New(toolkit.WithObserver(view))
	defer closeWithin(5*time.Second, tk.Close)
	ran := 0
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_note"}, func(context.Context, struct{}) (string, error) {
		ran++
		return "written", nil
	})); err != nil {
		t.Fatal(err)
	}
	perms, err := useInterceptors(tk)
	if err != nil {
		t.Fatal(err)
	}
	desk := &approvalDesk{perms: perms, mode: "terminal", view: view,
		in: bufio.NewReader(strings.NewReader("not today\ny\na\n"))}
	sess, _ := tk.Session("t")
	turn := func(id string) toolkit.Result {
		run := sess.Start(context.Background(), []toolkit.Call{{ID: id, Name: "write_note", Args: []byte(`{}`)}})
		for r := range run.Results() {
			if !r.Final() {
				if err := desk.suspended(context.Background(), "t", r.Call); err != nil {
					t.Fatal(err)
				}
			}
		}
		return run.Wait()[0]
	}
	if r := turn("c1"); r.State != events.StateDenied || !strings.Contains(r.Text(), "not today") {
		t.Fatalf("rejected: %s %q", r.State, r.Text())
	}
	if r := turn("c2"); r.State != events.StateSuccess {
		t.Fatalf("approved: %s %q", r.State, r.Text())
	}
	if r := turn("c3"); r.State != events.StateSuccess {
		t.Fatalf("always: %s %q", r.State, r.Text())
	}
	// "a" added a rule: the next call runs without asking (nothing is left
	// to read on the terminal, so a question would fail the test).
	if r := turn("c4"); r.State != events.StateSuccess {
		t.Fatalf("after always: %s %q", r.State, r.Text())
	}
	if ran != 3 {
		t.Errorf("the tool ran %d times, want 3", ran)
	}
	for _, want := range []string{"rejected c1       by you: not today", "approved c2       by you", "approved c3       by you"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "Approve?") != 3 {
		t.Errorf("asked %d times, want 3:\n%s", strings.Count(out.String(), "Approve?"), out.String())
	}
}

// TestTerminalSuggestions: the terminal lists the suggested rules by
// number; answering a number approves with that rule, which then lets the
// same call run without a question, and only that call.
func TestTerminalSuggestions(t *testing.T) {
	// The view observes the toolkit, as in the demo: the desk's question
	// comes after the view showed the call's wait.
	var out syncBuffer
	view := newTermView(&out, false)
	tk := toolkit.New(toolkit.WithObserver(view))
	defer closeWithin(5*time.Second, tk.Close)
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_note"}, func(_ context.Context, in struct {
		Title string `json:"title"`
	}) (string, error) {
		return "written", nil
	})); err != nil {
		t.Fatal(err)
	}
	perms, err := useInterceptors(tk)
	if err != nil {
		t.Fatal(err)
	}
	desk := &approvalDesk{perms: perms, mode: "terminal", view: view,
		in: bufio.NewReader(strings.NewReader("1\nno\n"))}
	sess, _ := tk.Session("t")
	turn := func(id, args string) toolkit.Result {
		run := sess.Start(context.Background(), []toolkit.Call{{ID: id, Name: "write_note", Args: []byte(args)}})
		for r := range run.Results() {
			if !r.Final() {
				if err := desk.suspended(context.Background(), "t", r.Call); err != nil {
					t.Fatal(err)
				}
			}
		}
		return run.Wait()[0]
	}
	if r := turn("c1", `{"title":"x"}`); r.State != events.StateSuccess {
		t.Fatalf("c1: %s %q", r.State, r.Text())
	}
	if r := turn("c2", `{"title":"x"}`); r.State != events.StateSuccess {
		t.Fatalf("c2 (same call): %s %q", r.State, r.Text())
	}
	if r := turn("c3", `{"title":"y"}`); r.State != events.StateDenied {
		t.Fatalf("c3 (another call): %s %q", r.State, r.Text())
	}
	for _, want := range []string{"1 = approve and allow write_note again with exactly these arguments", "2 = approve and always allow write_note in this session"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "Approve?"); n != 2 {
		t.Errorf("asked %d times, want 2:\n%s", n, out.String())
	}
}
