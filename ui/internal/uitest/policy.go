package uitest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/toolstream/toolstream/ui"
)

// Policy is the authorization hook the tests give hosts: the user is the
// request's bearer token; each thread has an owner, who may do anything
// with it; approvers may answer any thread's approvals and nothing else.
// It records what it was asked.
type Policy struct {
	Owners    map[string]string // thread id -> user
	Approvers []string

	mu    sync.Mutex
	asked []Asked
}

// Asked is one question the hook was asked, and its answer.
type Asked struct {
	User    string
	Access  ui.Access
	Allowed bool
}

// Authorize is the hook (ui.WithAuthorize).
func (p *Policy) Authorize(r *http.Request, a ui.Access) error {
	user, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	err := p.decide(user, a)
	p.mu.Lock()
	p.asked = append(p.asked, Asked{User: user, Access: a, Allowed: err == nil})
	p.mu.Unlock()
	return err
}

func (p *Policy) decide(user string, a ui.Access) error {
	if user == "" {
		return fmt.Errorf("%w: send Authorization: Bearer <user>", ui.ErrUnauthenticated)
	}
	if p.Owners[a.Thread] == user {
		return nil
	}
	if a.Action == ui.ActionAnswer {
		for _, ap := range p.Approvers {
			if ap == user {
				return nil
			}
		}
	}
	return errors.New(user + " is neither the thread's owner nor an approver")
}

// Asked returns the questions asked since the last call.
func (p *Policy) Asked() []Asked {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.asked
	p.asked = nil
	return out
}
