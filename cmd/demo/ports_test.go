package main

import (
	"net"
	"strings"
	"testing"
)

// TestTakenPortsAreSaid: when the page's or the NATS listener's port is
// taken, the demo listens on another and says so, naming both; before, it
// fell back without a word.
func TestTakenPortsAreSaid(t *testing.T) {
	web, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	p := runPiped(t, "-listen", web.Addr().String(), "-nats-listen", nl.Addr().String(), "-dir", ".", "-speed", "0", "-plain", "-max-turns", "1", "-once")
	p.wait(t, "NATS: ")
	if err := p.stop(); err != nil {
		t.Logf("the demo: %v", err)
	}
	s := p.out.String()
	for _, want := range []string{
		"web page: " + web.Addr().String() + " is taken; the page listens on 127.0.0.1:",
		"NATS: " + nl.Addr().String() + " is taken; the embedded server listens on 127.0.0.1:",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the output lacks %q:\n%s", want, s)
		}
	}
}
