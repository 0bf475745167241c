//go:build amd64 && !purego

package events

// escapeBlocks is appendString's fast path (escape_amd64.s): it copies
// src[:n] to dst 32 bytes at a time with SSE2 (every amd64 processor has
// it), writing each ASCII byte JSON escapes as words[c] (lens[c] bytes of
// it count), and stops before a non-ASCII byte, when fewer than 32 bytes of
// src are left, or when fewer than 40 bytes of room (dst[:room]) are left.
// It returns how many bytes it read from src and wrote to dst.
//
//go:noescape
func escapeBlocks(dst *byte, room int, src *byte, n int, words *[128]uint64, lens *[128]uint8) (read, written int)
