package agent

import (
	"testing"
	"time"
)

// A long backoff doubled for many retries saturates at MaxWait instead of
// overflowing into a negative duration (which made the jitter panic).
func TestRetryWaitDoesNotOverflow(t *testing.T) {
	p := RetryPolicy{Attempts: 40, Backoff: 3 * time.Hour, MaxWait: time.Minute}.withDefaults()
	for n := 1; n < p.Attempts; n++ {
		d, ok := p.wait(n, 0)
		if !ok || d != time.Minute {
			t.Fatalf("retry %d: wait %v, %v; want the policy's MaxWait", n, d, ok)
		}
	}
}

// The doubling and the jitter stay positive even when MaxWait allows any
// wait at all.
func TestRetryWaitHugeMaxWait(t *testing.T) {
	p := RetryPolicy{Attempts: 70, Backoff: time.Second, MaxWait: time.Duration(1<<63 - 1)}
	for n := 1; n < p.Attempts; n++ {
		d, ok := p.wait(n, 0)
		if !ok || d < time.Second {
			t.Fatalf("retry %d: wait %v, %v", n, d, ok)
		}
	}
}
