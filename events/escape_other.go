//go:build !amd64 || purego

package events

// escapeBlocks has no fast path here: appendString's word loop does the
// work (see escape_amd64.go).
func escapeBlocks(dst *byte, room int, src *byte, n int, words *[128]uint64, lens *[128]uint8) (read, written int) {
	return 0, 0
}
