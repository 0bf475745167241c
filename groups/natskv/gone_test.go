package natskv_test

import (
	"context"
	"encoding/base64"
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

// TestBadStoredState: a value in the bucket that is not a state (written by
// hand, or by something else) is an error that names the session, the key
// and the bucket and says how to start over, for Load and Update alike.
func TestBadStoredState(t *testing.T) {
	ctx := context.Background()
	js := natstest.JetStream(t)
	st, err := natskv.New(ctx, js, "bad")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "bad")
	if err != nil {
		t.Fatal(err)
	}
	key := "s_" + base64.RawURLEncoding.EncodeToString([]byte("conv-1"))
	if _, err := kv.Put(ctx, key, []byte(`{"files": "yes"}`)); err != nil {
		t.Fatal(err)
	}
	_, lerr := st.Load(ctx, "conv-1")
	_, uerr := st.Update(ctx, "conv-1", func(m map[string]bool) (map[string]bool, error) { return m, nil })
	for _, err := range []error{lerr, uerr} {
		want := `natskv: session "conv-1": the state stored under key "` + key + `" of bucket "bad" is not valid (json: cannot unmarshal string into Go value of type bool); delete the key to start the session from its groups' defaults`
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}
