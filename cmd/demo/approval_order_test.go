package main

import (
	"strings"
	"testing"
)

// TestApprovalLineAfterTheCallStarts: with -approve page, the terminal
// shows write_note's start, then its wait, then the approval request:
// the desk's lines used to print as the call suspended, ahead of the
// start and wait lines the view prints from the events it is handed
// later (an asynchronous observer).
func TestApprovalLineAfterTheCallStarts(t *testing.T) {
	p := runPiped(t, "-listen", freeAddr(t), "-nats-listen", "", "-dir", ".", "-approve", "page", "-speed", "0", "-plain", "-session", "order", "-once")
	p.wait(t, "waiting for an answer on the web page")
	p.wait(t, "waiting     call_6")
	s := p.out.String()
	start := strings.Index(s, "start       call_6")
	waiting := strings.Index(s, "waiting     call_6")
	asks := strings.Index(s, "approval call_6")
	page := strings.Index(s, "waiting for an answer on the web page")
	if start < 0 || !(start < waiting && waiting < asks && asks < page) {
		t.Fatalf("want start, waiting, the request and where it is answered, in that order:\n%s", s)
	}
}
