package telemetry

import (
	"context"
	"testing"
)

// BenchmarkStartBatchUnset is what a batch costs the tracer when no
// provider is set: the whole of telemetry's cost per batch.
func BenchmarkStartBatchUnset(b *testing.B) {
	tel, err := New()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	h := tel.Tracehook()
	b.ReportAllocs()
	for b.Loop() {
		if _, bt := h.StartBatch(ctx, nil, 0); bt != nil {
			b.Fatal("traced without a provider")
		}
	}
}
