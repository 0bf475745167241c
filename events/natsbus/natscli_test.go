package natsbus_test

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestNATSCLIReceivesEvents: the nats CLI, connected over TCP to the
// embedded server, receives a session's events as docs/events.md describes
// them: one JSON envelope per message, decodable and complete.
func TestNATSCLIReceivesEvents(t *testing.T) {
	cli := natstest.CLI(t)
	bus := natstest.Bus(t, natsbus.WithListen("127.0.0.1:0"))
	if bus.ClientURL() == "" {
		t.Fatal("no client URL for the TCP listener")
	}
	tk := kit(t, bus)
	const calls, lines = 2, 5
	total := calls * (1 + lines + lines + 1 + 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, cli, "sub", bus.Subjects().Session("cli session"),
		"--server", bus.ClientURL(), "--raw", "--count", strconv.Itoa(total))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := bus.Server().NumSubscriptions()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Run only once the CLI's subscription is on the server.
	for bus.Server().NumSubscriptions() <= before {
		select {
		case <-ctx.Done():
			t.Fatalf("the nats CLI never subscribed: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	sess, _ := tk.Session("cli session")
	sess.Run(context.Background(), callsFor(calls, lines))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nats sub: %v\n%s", err, stderr.String())
	}

	var evs []*events.Event
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, err := events.Decode(line)
		if err != nil {
			t.Fatalf("the CLI printed %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != total {
		t.Fatalf("the CLI got %d events, want %d", len(evs), total)
	}
	checkCalls(t, evs)
}
