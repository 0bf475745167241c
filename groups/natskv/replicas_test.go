package natskv_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestReplicatedBucketAnswersOnceNewReturns: on a three-server cluster, a
// bucket kept on all three answers its first read and write as soon as New
// returns (its replicas have a leader), without the caller having to retry.
func TestReplicatedBucketAnswersOnceNewReturns(t *testing.T) {
	cl := natstest.NewCluster(t, 3)
	for i := range 3 {
		js := cl.JetStream(t, i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		bucket := []string{"TS_R3_A", "TS_R3_B", "TS_R3_C"}[i]
		store, err := natskv.New(ctx, js, bucket, natskv.WithReplicas(3))
		if err != nil {
			t.Fatal(err)
		}
		// One quick attempt each, as an application's first request would
		// make (JetStream's own API timeout is seconds).
		quick, cancelQuick := context.WithTimeout(ctx, 500*time.Millisecond)
		if _, err := store.Load(quick, "conv"); err != nil {
			t.Errorf("bucket %s: the first read right after New: %v", bucket, err)
		}
		if _, err := store.Update(quick, "conv", func(m map[string]bool) (map[string]bool, error) {
			return map[string]bool{"notes": true}, nil
		}); err != nil {
			t.Errorf("bucket %s: the first write right after New: %v", bucket, err)
		}
		cancelQuick()
		cancel()
	}
}
