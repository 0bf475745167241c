package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestOtherSessionsLabelled: a run that comes in over /api/chat while the
// page is up prints in the tour's terminal with its session's name on each
// line, so it does not read like the tour running again; before, its lines
// ("start       call_q   tool_search") were the tour's own, unlabelled.
func TestOtherSessionsLabelled(t *testing.T) {
	p := runPiped(t, "-listen", freeAddr(t), "-nats-listen", "", "-dir", ".", "-speed", "0", "-plain", "-once=false", "-max-turns", "1", "-session", "labels")
	p.wait(t, "live page: ")
	addr := regexp.MustCompile(`live page: http://([^/]+)/`).FindStringSubmatch(p.out.String())[1]
	p.wait(t, "The page stays up")
	tour := p.out.String()

	chat := frames(t, "http://"+addr+"/api/chat", `{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Give me an overview of this folder."}]}]}`)
	if chat[len(chat)-1] != "[DONE]" {
		t.Fatalf("the chat response: %v", chat)
	}
	// A batch reports its end once its observers have its results: the
	// terminal has the run's lines by now.
	if err := p.stop(); err != nil {
		t.Logf("the demo: %v", err)
	}
	after := strings.TrimPrefix(p.out.String(), tour)
	for _, want := range []string{"  [chat-c1] start       call_q   tool_search", "  [chat-c1] groups      ", "  [chat-c1] success     call_0   reset_tools"} {
		if !strings.Contains(after, want) {
			t.Errorf("the chat's run lacks %q:\n%s", want, after)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(after), "\n") {
		if strings.Contains(line, "call_") && !strings.Contains(line, "[chat-c1]") {
			t.Errorf("a line of the chat's run without its session: %q", line)
		}
	}
}
