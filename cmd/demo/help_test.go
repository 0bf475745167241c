package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestHelpSaysOnceDefaultOnce: -help gives -once's default once; it said
// "(on by default when stdout is not a terminal) (default true)". The
// default itself still follows stdout.
func TestHelpSaysOnceDefaultOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	_ = run(context.Background(), []string{"-help"}, &out, &errOut)
	help := out.String()
	i := strings.Index(help, "  -once")
	if i < 0 {
		t.Fatalf("no -once in the help:\n%s", help)
	}
	entry := help[i+len("  -once"):]
	if j := strings.Index(entry, "\n  -"); j >= 0 {
		entry = entry[:j]
	}
	if n := strings.Count(entry, "default"); n != 1 {
		t.Errorf("-once's help gives its default %d times: %s", n, entry)
	}
	c, err := parseFlags([]string{"-dir", "."}, nil, io.Discard)
	if err != nil || !c.once {
		t.Errorf("stdout not a terminal: -once should be on: %v %v", c, err)
	}
	if c, err := parseFlags([]string{"-dir", ".", "-once=false"}, nil, io.Discard); err != nil || c.once {
		t.Errorf("-once=false: %v %v", c, err)
	}
}
