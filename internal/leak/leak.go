// Package leak checks tests for goroutines left running. It replaces a
// third-party leak checker with the little the project needs: a check after
// all tests of a package (TestMain) and around one test (Check).
//
// A goroutine counts as leaked when it is still there after a grace period
// and is not one the Go runtime or the testing package keeps for themselves.
package leak

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Grace is how long goroutines get to finish after a test before they are
// reported: closing a server or a connection ends its goroutines a little
// later, not at once.
var Grace = 5 * time.Second

// VerifyTestMain runs the package's tests and then fails the test binary if
// goroutines are left running. Use it as TestMain's body:
//
//	func TestMain(m *testing.M) { leak.VerifyTestMain(m) }
//
// The cleanups run after the tests, before the check: what the package's
// tests shared (a binary built once, its directory) goes away with them.
func VerifyTestMain(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if code == 0 {
		if left := wait(nil); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "leak: %d goroutine(s) still running after the tests:\n\n%s\n", len(left), strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Check records the goroutines running now and returns a function that fails
// t if new ones are still running when it is called. Use it with defer at the
// top of a test:
//
//	defer leak.Check(t)()
func Check(t testing.TB) func() {
	before := map[string]bool{}
	for _, g := range goroutines() {
		before[g.id] = true
	}
	return func() {
		t.Helper()
		if left := wait(before); len(left) > 0 {
			t.Errorf("%d goroutine(s) leaked:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	}
}

// wait polls until no goroutine other than those in skip (by id) and the
// runtime's own is left, or Grace passes; it returns the stacks left.
func wait(skip map[string]bool) []string {
	deadline := time.Now().Add(Grace)
	delay := time.Millisecond
	for {
		var left []string
		for _, g := range goroutines() {
			if !skip[g.id] && !g.benign() {
				left = append(left, g.stack)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

type goroutine struct {
	id    string
	stack string
}

// goroutines returns every goroutine but the calling one.
func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for i, block := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // the caller
		}
		s := string(block)
		// "goroutine 42 [running]:"
		head, _, _ := strings.Cut(s, "\n")
		fields := strings.Fields(head)
		if len(fields) < 2 || fields[0] != "goroutine" {
			continue
		}
		out = append(out, goroutine{id: fields[1], stack: s})
	}
	return out
}

// benign reports goroutines the runtime and the testing package own.
func (g goroutine) benign() bool {
	_, body, _ := strings.Cut(g.stack, "\n")
	top, _, _ := strings.Cut(body, "\n")
	for _, f := range []string{
		"testing.(*T).Run(", "testing.(*T).Parallel(", "testing.(*B).run1(", "testing.(*B).doBench(",
		"testing.(*B).launch(", "testing.runFuzzing(", "testing.(*F).Fuzz(", "testing.RunTests(",
		"testing.runTests(", "runtime.goexit(", "os/signal.signal_recv(", "os/signal.loop(",
		"runtime.ensureSigM(", "runtime.ReadTrace(",
	} {
		if strings.HasPrefix(top, f) {
			return true
		}
	}
	return false
}
