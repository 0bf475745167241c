package natskv_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestLongSessionIDKeepsTheConnection: a session id longer than a toolkit
// allows (which code can still pass, to Manager.Active for one) is refused
// with a short error. Its key made a subject longer than the server's
// control line limit, and the server closed the connection: every later
// read and write of the bucket, and anything else on that connection,
// failed with "nats: connection closed", for good.
func TestLongSessionIDKeepsTheConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	st, err := natskv.New(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New()
	t.Cleanup(func() { tk.Close(context.Background()) })
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "t"}, func(context.Context, struct{}) (string, error) { return "", nil }))
	m, err := groups.Install(tk, groups.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(groups.Group{Name: "g", Description: "G.", Tools: []string{"t"}, Active: true}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 5000)
	set := func(map[string]bool) (map[string]bool, error) { return map[string]bool{"g": true}, nil }
	for name, op := range map[string]func() error{
		"Load":           func() error { _, err := st.Load(ctx, long); return err },
		"Update":         func() error { _, err := st.Update(ctx, long, set); return err },
		"Manager.Active": func() error { _, err := m.Active(ctx, long); return err },
	} {
		err := op()
		if err == nil || !strings.Contains(err.Error(), "5000 bytes long, at most 256 allowed") || len(err.Error()) > 400 {
			t.Errorf("%s with a 5000-byte session id: %.300v (%d bytes)", name, err, len(errString(err)))
		}
		if _, err := st.Update(ctx, "short", set); err != nil {
			t.Fatalf("after %s with a 5000-byte session id, a short one: %v", name, err)
		}
		if got, err := m.Active(ctx, "short"); err != nil || !slices.Equal(got, []string{"g"}) {
			t.Fatalf("after %s with a 5000-byte session id, a short one: %v %v", name, got, err)
		}
	}
	// The longest id a toolkit allows works.
	max := strings.Repeat("é", 128)
	if _, err := st.Update(ctx, max, set); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Load(ctx, max); err != nil || !got["g"] {
		t.Fatalf("a 256-byte id: %v %v", got, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
