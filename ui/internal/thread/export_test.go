package thread

import (
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/ui/internal/frames"
)

// SetMarkDelay holds every mark back by d (tests only).
func SetMarkDelay(d time.Duration) { markDelay = d }

// SetMovedOnHook sets the function Begin calls when it unlocked the
// thread to cancel a paused run for new messages (tests only; nil resets
// it).
func SetMovedOnHook(f func()) { movedOnHook = f }

// SetStartHook sets the function Begin calls when it is about to start a
// run, before it asks the host whether it is closed (tests only; nil
// resets it).
func SetStartHook(f func()) { startHook = f }

// SetAnswersHook sets the function Begin calls when a request's answers
// were checked, before the thread announces them (tests only; nil resets
// it).
func SetAnswersHook(f func()) { answersHook = f }

// UserTexts returns the texts of the conversation's user messages; call
// it while no run goes on.
func UserTexts(t *Thread) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, m := range t.conv.Messages {
		if m.Role == agent.RoleUser {
			out = append(out, m.Text())
		}
	}
	return out
}

// SetDefaultWriteTimeout makes d the write timeout of hosts and frame
// writers that take the default (tests only; 0 resets it to 30 s).
func SetDefaultWriteTimeout(d time.Duration) {
	if d == 0 {
		d = 30 * time.Second
	}
	frames.DefaultTimeout = d
}
