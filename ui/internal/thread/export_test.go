package thread

import (
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/ui/internal/frames"
)

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
