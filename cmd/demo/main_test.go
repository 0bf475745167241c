package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDemoRuns runs the demo on this repository and checks that it shows
// progress and results apart, and the errors a model would get.
func TestDemoRuns(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-dir", "../..", "-listen", "127.0.0.1:0"}, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{
		"Tools the model sees at the start: count_lines, load_skill_through_path, reset_tools",
		"Active tool groups: notes.",
		"Tools the model sees after reset_tools: count_lines, write_note, load_skill_through_path, reset_tools",
		`<skill id="file-analysis">`,
		`Skill "file-analysis" loaded.`,
		"This skill switched on the tool group(s) files. Now available: file_inventory, folder_stats, hash_files, search_text.",
		"Tools the model sees after load_skill_through_path: count_lines, hash_files, search_text, write_note, folder_stats, file_inventory, load_skill_through_path, reset_tools",
		"nats sub 'toolstream.demo.>' --server nats://127.0.0.1:",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	_, turn2, ok := strings.Cut(s, "=== Turn 3")
	if !ok {
		t.Fatalf("no second turn:\n%s", s)
	}
	progress, results, ok := strings.Cut(turn2, "--- results")
	if !ok {
		t.Fatalf("no results section:\n%s", s)
	}
	for _, want := range []string{"start   call_1", "100%", "success call_2", "completion order:"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress section lacks %q:\n%s", want, progress)
		}
	}
	for _, want := range []string{
		`[call_1] count_lines -> success`, `"language":"Go"`,
		`[call_2] hash_files -> success`, "8 files hashed",
		`did you mean "count_lines"?`,
		"- query: is required", `- max_matches: must be an integer, got string "many"`,
		"[call_6] write_note -> success",
	} {
		if !strings.Contains(results, want) {
			t.Errorf("results lack %q:\n%s", want, results)
		}
	}
	// The interceptors: an approval answered with edited arguments, an
	// e-mail address redacted, a flaky tool retried, a large result
	// evicted to a file that holds all of it.
	for _, want := range []string{
		`approval call_6   write_note`, `approved call_6   by the scripted agent (title edited to demo-summary)`,
		"demo-summary.md:\n", "Questions: [redacted email]",
		"attempt 2: the stats service did not answer", "(answered on attempt 3)",
		"[call_8] file_inventory -> success", "The result is too large to show here",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(results, "ops@example.com") {
		t.Error("the e-mail address reached the model")
	}
	m := regexp.MustCompile(`saved in full to (\S+\.txt)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no eviction location:\n%s", s)
	}
	stored, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("the evicted result is not where the model was told: %v", err)
	}
	if n := strings.Count(string(stored), "\n"); n < 100 || !strings.Contains(string(stored), "cmd/demo/main_test.go") {
		t.Errorf("the stored inventory is not complete (%d lines)", n)
	}
	if strings.Contains(results, "counted ") || strings.Contains(results, "searching ") {
		t.Error("progress messages leaked into the results")
	}
	if !strings.Contains(s, "events published to NATS (0 progress dropped, 0 undelivered)") {
		t.Errorf("no publishing summary:\n%s", results)
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-session", ""}, &out, &errOut); err == nil {
		t.Fatal("empty session id accepted")
	}
	if err := run([]string{"-nope"}, &out, &errOut); err == nil {
		t.Fatal("unknown flag accepted")
	}
}
