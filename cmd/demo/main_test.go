package main

import (
	"bytes"
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
		"This skill switched on the tool group(s) files. Now available: hash_files, search_text.",
		"Tools the model sees after load_skill_through_path: count_lines, hash_files, search_text, write_note, load_skill_through_path, reset_tools",
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
