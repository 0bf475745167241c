package mcpbridge_test

import (
	"strings"
	"testing"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// FuzzToolName: whatever a server calls its tool, the name is valid,
// stable, and kept as is when it already is valid.
func FuzzToolName(f *testing.F) {
	for _, s := range []string{"echo", "get-sum", "weird.name/ü", strings.Repeat("x", 80), "", "a b", "日本語", "\x00", "mcp__x__y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tool string) {
		for _, prefix := range []string{"", "mcp__srv__", mcpbridge.DefaultPrefix(strings.Repeat("s", 40))} {
			n := mcpbridge.ToolName(prefix, tool)
			if err := toolkit.CheckToolName(n); err != nil {
				t.Fatalf("ToolName(%q, %q) = %q: %v", prefix, tool, n, err)
			}
			if !strings.HasPrefix(n, prefix) {
				t.Fatalf("ToolName(%q, %q) = %q lost the prefix", prefix, tool, n)
			}
			if toolkit.CheckToolName(prefix+tool) == nil && n != prefix+tool {
				t.Fatalf("ToolName(%q, %q) = %q changed a valid name", prefix, tool, n)
			}
			if n2 := mcpbridge.ToolName(prefix, tool); n2 != n {
				t.Fatalf("not stable: %q then %q", n, n2)
			}
		}
	})
}

// FuzzParseCommand: never a panic; words without quotes or blanks come back
// as they were.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"node server.js stdio", `npx -y "a b" 'c'`, `x "open`, "", "   ", "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, err := mcpbridge.ParseCommand(line)
		if err != nil {
			return
		}
		if !strings.ContainsAny(line, `"'`) {
			words := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\n\r\v\f", r) })
			got := append([]string{s.Command}, s.Args...)
			if strings.Join(got, "\x00") != strings.Join(words, "\x00") {
				t.Fatalf("%q: %q, want %q", line, got, words)
			}
		}
	})
}
