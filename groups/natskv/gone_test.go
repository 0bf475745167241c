package natskv_test

import (
	"context"
	"testing"

	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// TestBucketGone: once the bucket is deleted, Load and Update fail, instead
// of Load answering "nothing stored" (every session silently back to the
// defaults) or Update recreating the state in nowhere.
func TestBucketGone(t *testing.T) {
	ctx := context.Background()
	js := natstest.JetStream(t)
	st, err := natskv.New(ctx, js, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "s", func(map[string]bool) (map[string]bool, error) { return map[string]bool{"g": true}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx, "s")
	t.Logf("Load: %v %v", got, err)
	if err == nil {
		t.Errorf("Load after the bucket was deleted: %v, no error", got)
	}
	next, err := st.Update(ctx, "s", func(cur map[string]bool) (map[string]bool, error) { return map[string]bool{"h": true}, nil })
	t.Logf("Update: %v %v", next, err)
	if err == nil {
		t.Errorf("Update after the bucket was deleted: %v, no error", next)
	}
}
