package events

import (
	"encoding/json"
	"strings"
	"testing"
)

// blockSpecials are bytes the block test must flag, with their neighbours
// that it must not (a byte one bit away from a special one: the
// comparisons mask bits).
var blockSpecials = []string{
	"\x00", "\x1f", "\n", "\t", "\"", "&", "<", ">", "\\", "\x7f", "\x80", "é", "\u2028", "\xff", "日", "😀",
	" ", "!", "$", "'", ";", "=", "?", "[", "]", "^", "|", "~", "^", "\x5d", "\x7c",
}

// TestAppendStringBlocks: wherever a special byte falls in the 32-byte
// blocks of the fast path (escape_amd64.s), and whatever room dst has, the
// escaper writes what encoding/json writes, with the blocks and with its
// word loop alone (what other platforms run).
func TestAppendStringBlocks(t *testing.T) {
	check := func(t *testing.T, s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, room := range []int{0, 1, len(s), 6 * len(s)} {
			dst := make([]byte, 3, 3+room)
			copy(dst, "pre")
			for _, blocks := range []bool{true, false} {
				d := append(make([]byte, 0, cap(dst)), dst...)
				if got := escapeString(d, s, blocks); string(got) != "pre"+string(want) {
					t.Fatalf("escapeString(%q, blocks %v) with %d bytes of room:\n got %s\nwant pre%s", s, blocks, room, got, want)
				}
			}
		}
	}
	for _, c := range blockSpecials {
		for size := 32; size <= 100; size += 17 {
			for at := 0; at+len(c) <= size; at++ {
				check(t, strings.Repeat("a", at)+c+strings.Repeat("b", size-at-len(c)))
			}
		}
		// Specials in every block and at both ends of a block.
		check(t, strings.Repeat(c+strings.Repeat("x", 31), 5))
		check(t, strings.Repeat(strings.Repeat("x", 31)+c, 5))
		check(t, strings.Repeat(c, 200))
	}
	// Every byte escaped (6 bytes out for 1 in): the fast path stops for
	// room, the caller grows dst and calls it again.
	check(t, strings.Repeat("\x01", 1000))
	check(t, strings.Repeat("<>&\"\\\x1f", 300))
	// A long string, over several runs of the fast path.
	check(t, strings.Repeat("text with \"quotes\" and\nnewlines & <tags>\t", 3000))
	// Plain text longer than a run (maxBlockRun), with special bytes
	// around where runs end.
	for _, c := range []string{"", "\n", "é", "\x01"} {
		for _, at := range []int{maxBlockRun - 40, maxBlockRun - 31, maxBlockRun - 1, maxBlockRun, maxBlockRun + 7, 2*maxBlockRun - 32} {
			check(t, strings.Repeat("p", at)+c+strings.Repeat("q", maxBlockRun+100))
		}
	}
}
