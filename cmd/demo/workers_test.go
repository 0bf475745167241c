package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestDemoWorkers runs the demo binary with -workers 2 on a NATS server of
// its own: the folder tools run in two worker processes (each result of
// theirs names its worker), the tour ends as it does in one process, and
// `nats micro ls` lists the two workers while the page stays up; Ctrl-C
// ends the demo and its workers.
func TestDemoWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	bin, url, col := demoAndCollector(t, "toolstream.w.*.result")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-nats", url, "-session", "w", "-dir", "../..", "-speed", "0",
		"-listen", freeAddr(t), "-once=false", "-plain", "-workers", "2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "The page stays up") {
			break
		}
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"tool workers: ", "=== Summary: 6 turns, 13 calls", "states: 1 interrupted, 10 success, 2 error"} {
		if !strings.Contains(text, want) {
			// Its standard error is read once the process is gone: exec's
			// copier writes it until then (a data race under -race when the
			// demo failed early, seen once).
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("output lacks %q:\n%s\n%s", want, text, stderr.String())
		}
	}
	workers := regexp.MustCompile(`(\w{22}) \(pid (\d+)\)`).FindAllStringSubmatch(text, -1)
	if len(workers) != 2 {
		t.Fatalf("workers named: %v", workers)
	}
	ids := []string{workers[0][1], workers[1][1]}

	// Each result of a worker tool names one of the two.
	remoteResults := 0
	for _, ev := range col.snapshot() {
		if !slices.Contains([]string{"count_lines", "hash_files", "search_text", "file_inventory"}, ev.Tool) ||
			ev.Type != events.TypeResult || ev.Result.State != events.StateSuccess {
			continue
		}
		remoteResults++
		if w, _ := ev.Result.Meta["worker"].(string); !slices.Contains(ids, w) {
			t.Errorf("%s %s: meta worker %v, not one of %v", ev.Call, ev.Tool, ev.Result.Meta["worker"], ids)
		}
	}
	if remoteResults < 4 {
		t.Errorf("%d successful results of worker tools, want at least 4", remoteResults)
	}

	// nats micro ls against the demo's server.
	ls, err := exec.Command(natstest.CLI(t), "micro", "ls", "--json", "--server", url).CombinedOutput()
	if err != nil {
		t.Fatalf("nats micro ls: %v\n%s", err, ls)
	}
	var infos []struct {
		Name string `json:"name"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(ls, &infos); err != nil {
		t.Fatalf("nats micro ls: %v\n%s", err, ls)
	}
	var listed []string
	for _, in := range infos {
		if in.Name == "toolstream_tools" {
			listed = append(listed, in.ID)
		}
	}
	slices.Sort(listed)
	slices.Sort(ids)
	if !slices.Equal(listed, ids) {
		t.Fatalf("nats micro ls lists %v, the demo started %v", listed, ids)
	}

	// Ctrl-C: the demo ends with status 0 and takes its workers with it.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("demo after Ctrl-C: %v\n%s", err, stderr.String())
	}
	for _, w := range workers {
		pid := w[2]
		if _, err := os.Stat("/proc/" + pid); err == nil {
			t.Errorf("worker pid %s still runs after the demo ended", pid)
		}
	}
}
