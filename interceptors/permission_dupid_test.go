package interceptors_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// waitBatch waits for a batch's results, at most d.
func waitBatch(t *testing.T, b *toolkit.Batch, d time.Duration) ([]toolkit.Result, bool) {
	t.Helper()
	done := make(chan []toolkit.Result, 1)
	go func() { done <- b.Wait() }()
	select {
	case rs := <-done:
		return rs, true
	case <-time.After(d):
		return nil, false
	}
}

// TestApprovalCallIDInUse: a call asks while another call with the same id
// (the model chose it) waits for approval in the same session, in a batch
// that runs beside it. Approve names a call by session and id, so the two
// cannot both wait: the second fails at once (ErrInvalidCall) saying
// why. It took the first one's place: Approve ran the second call, with
// arguments the person never saw in the request they answered, and the
// first one, at its approval timeout, waited for a decision that could
// no longer come, for ever.
func TestApprovalCallIDInUse(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(2*time.Second))
	a := f.start("s", permCall("c1", "write", `{"path":"/tmp/a"}`))
	if req := f.nextAsk(t); req.CallID != "c1" || string(req.Args) != `{"path":"/tmp/a"}` {
		t.Fatalf("request %+v", req)
	}
	b := f.start("s", permCall("c1", "write", `{"path":"/etc/passwd"}`))
	rs, ok := waitBatch(t, b, time.Second)
	if !ok {
		t.Error("the second call with id c1 waits for approval")
	} else if rs[0].State != events.StateError || !errors.Is(rs[0].Err, toolkit.ErrInvalidCall) || !strings.Contains(rs[0].Text(), `"c1"`) {
		t.Errorf("the second call with id c1: %s %q", rs[0].State, rs[0].Text())
	}
	if err := f.perms.Approve("s", "c1"); err != nil {
		t.Fatal(err)
	}
	if rs, ok := waitBatch(t, a, 5*time.Second); !ok {
		t.Error("the first call with id c1 never ended")
	} else if rs[0].State != events.StateSuccess || rs[0].Text() != "wrote /tmp/a" {
		t.Errorf("the first call with id c1: %s %q", rs[0].State, rs[0].Text())
	}
	if w := f.writes(); len(w) != 1 || w[0] != "/tmp/a" {
		t.Errorf("writes %v, want only /tmp/a, the call the person approved", w)
	}
}
