package mcpbridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
)

// envSlowStart makes the stdio test server (this test binary) write a
// package manager's chatter to its standard error, then sleep this long
// before it speaks MCP: a cold `npx -y` as the user sees it.
const envSlowStart = "MCPBRIDGE_TEST_SLOW_START"

// slowStart is what the test server does before serving when envSlowStart
// is set: "never" reads its input until the client closes it, and exits
// without a word (a process that outlives its client makes Close wait
// for the SDK's terminate delay).
func slowStart() {
	v := os.Getenv(envSlowStart)
	if v == "" {
		return
	}
	for i := 1; i <= 40; i++ { // more than the error keeps
		fmt.Fprintf(os.Stderr, "npm http fetch GET 200 https://registry.npmjs.org/dep-%d 120ms\n", i)
	}
	fmt.Fprintln(os.Stderr, "npm warn exec The following package was not found and will be installed: slow-server@1.0.0")
	if v == "never" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		panic(err)
	}
	time.Sleep(d)
}

// slowServer is a stdio endpoint for the test server that waits d before it
// answers ("never" for a server that never does).
func slowServer(t *testing.T, d string) mcpbridge.Stdio {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpbridge.Stdio{Command: exe, Args: []string{"-test.run=^$"}, Env: []string{envStdioServer + "=1", envSlowStart + "=" + d}}
}

// A stdio server that does not answer within the dial timeout: the error
// names the server and its command, quotes the end of its standard error
// (bounded, whole lines) and says which option gives it more time.
func TestClientSlowStartDialTimeout(t *testing.T) {
	ep := slowServer(t, "never")
	tk := testutil.Kit(t)
	_, err := mcpbridge.Connect(context.Background(), tk, "slow", ep, mcpbridge.WithDialTimeout(500*time.Millisecond))
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	msg := err.Error()
	t.Logf("error: %s", msg)
	for _, want := range []string{
		`MCP server "slow"`,
		"(command: " + ep.Command + " -test.run=^$)",
		"did not answer within 500ms, the dial timeout",
		"will be installed: slow-server@1.0.0", // the last line of its standard error
		"dep-40",
		"mcpbridge.WithDialTimeout",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	if strings.Contains(msg, "dep-31 ") {
		t.Error("the error quotes all of the server's standard error, not its end")
	}
	if len(msg) > 2500 {
		t.Errorf("the error is %d bytes long", len(msg))
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) is false for %T", err)
	}
}

// The caller's context ends first: the error says so (the context passed
// to Connect), not the option.
func TestClientSlowStartContext(t *testing.T) {
	ep := slowServer(t, "never")
	tk := testutil.Kit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := mcpbridge.Connect(ctx, tk, "slow", ep)
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	msg := err.Error()
	t.Logf("error: %s", msg)
	for _, want := range []string{`MCP server "slow"`, ep.Command, "slow-server@1.0.0", "the context passed to Connect ended (context deadline exceeded) ", "ms after the attempt began", "a later deadline"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	if strings.Contains(msg, "WithDialTimeout") {
		t.Error("the error blames the dial timeout, but the caller's context ended first")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) is false for %T", err)
	}
}

// With the time it needs, the slow server connects.
func TestClientSlowStartGivenTime(t *testing.T) {
	ep := slowServer(t, "1s")
	tk := testutil.Kit(t)
	c := connect(t, tk, "slow", ep, mcpbridge.WithDialTimeout(20*time.Second))
	if len(c.Tools()) == 0 {
		t.Fatal("no tools")
	}
}
