package toolkit

import (
	"testing"
	"unsafe"
)

// TestBatchSizeClass: a one-call batch is one allocation of 1,408 bytes
// (the allocator's size class above 1,280). The Before hooks' guard lives in
// the room that class leaves over the batch's own fields, so that hooks
// allocate no guard; a batch that grew past the class would cost every run
// 128 bytes more. Whoever needs the room can move the guard out (one
// 80-byte allocation per batch with hooks, +45 ns at BenchmarkRunBatchHook).
func TestBatchSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Batch{}); n > 1408 {
		t.Fatalf("Batch is %d bytes, over the 1,408-byte size class (guard %d bytes)", n, unsafe.Sizeof(guard{}))
	}
}
