//go:build toolstream_testhooks

package uitest

import (
	"testing"

	"github.com/toolstream/toolstream/ui/internal/hook"
)

// RejectInTheWindow makes the request's answer i find its call no longer
// waiting: just before it is given (hook.BeforeAnswer), the call is
// decided elsewhere, as an approval that expires just then would be.
func (a *Agent) RejectInTheWindow(t testing.TB, id string, i int, call string) {
	t.Helper()
	sess := a.Threads.Lookup(id).Session().ID()
	hook.OnBeforeAnswer = func(j int) {
		if j == i {
			if err := a.Perms.Reject(sess, call, "decided elsewhere"); err != nil {
				t.Errorf("rejecting %s in the window: %v", call, err)
			}
		}
	}
	t.Cleanup(func() { hook.OnBeforeAnswer = nil })
}
