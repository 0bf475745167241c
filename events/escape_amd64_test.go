//go:build amd64 && !purego

package events

import (
	"strings"
	"testing"
)

// TestEscapeBlocksTakesPlainText: the fast path does the work it is there
// for (a build that silently lost it would still pass every output test),
// and stops where its contract says.
func TestEscapeBlocksTakesPlainText(t *testing.T) {
	run := func(s string, room int) (read, written int, out string) {
		dst := make([]byte, room)
		src := []byte(s)
		read, written = escapeBlocks(&dst[0], room, &src[0], len(src), &escWord, &escLen)
		return read, written, string(dst[:written])
	}
	plain := strings.Repeat("abcdefgh", 12) // 96 bytes
	if r, w, out := run(plain, 200); r != 96 || w != 96 || out != plain {
		t.Errorf("plain 96 bytes: read %d, wrote %d (%q), want all", r, w, out)
	}
	// Fewer than 32 bytes left: the rest is the caller's.
	if r, w, _ := run(plain[:70], 200); r != 64 || w != 64 {
		t.Errorf("70 plain bytes: read %d, wrote %d, want 64, 64", r, w)
	}
	// An ASCII escape is written; a non-ASCII byte stops it before it.
	s := strings.Repeat("a", 40) + "\n" + strings.Repeat("b", 10) + "é" + strings.Repeat("c", 40)
	if r, w, out := run(s, 200); r != 51 || w != 52 || out != strings.Repeat("a", 40)+`\n`+strings.Repeat("b", 10) {
		t.Errorf("escape then non-ASCII: read %d, wrote %d (%q)", r, w, out)
	}
	// It keeps 40 bytes of room: a block and an escape word.
	if r, w, _ := run(plain, 71); r != 32 || w != 32 {
		t.Errorf("71 bytes of room: read %d, wrote %d, want one block", r, w)
	}
}
