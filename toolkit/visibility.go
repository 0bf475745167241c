package toolkit

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnavailable is the cause of a call to a registered tool that the
// session cannot use right now (for example, one in an inactive tool
// group).
var ErrUnavailable = errors.New("tool not available in this session")

// Visibility decides which tools a session sees and what a call to each
// runs. Packages groups and skills implement it; without one, every
// registered tool is visible to every session and runs as registered.
// Implementations must be safe for concurrent use.
//
// A session may be shown a variant of a registered tool ([Tool.Variant]): the
// same name and handler with a description and input schema made for the
// session, such as reset_tools listing the session's groups. Resolve must
// then return that same variant, so that the engine checks the arguments
// against the schema the model saw.
//
// A Visibility that keeps per-session state in process may also have a
// method SessionClosed(session string): Session.Close tells it the
// session is gone.
type Visibility interface {
	// Tools returns the tools the session sees, in the order to show them:
	// some of registered (given in registration order) or variants of them.
	Tools(ctx context.Context, s *Session, registered []*Tool) ([]*Tool, error)
	// Resolve returns the tool a call to the registered tool t runs as in
	// session s: t itself, a variant of t, or an error that refuses the
	// call (its message is what the model reads). It is asked when the call
	// starts, not when the batch is queued, so that a call sees what the
	// calls before it in the batch changed.
	Resolve(ctx context.Context, s *Session, t *Tool) (*Tool, error)
}

// sessionCloser is a Visibility that keeps per-session state in process
// (see [Visibility]).
type sessionCloser interface {
	SessionClosed(session string)
}

// SetVisibility installs v (nil: every tool visible). Runs that already
// started keep the visibility they started with.
func (tk *Toolkit) SetVisibility(v Visibility) {
	tk.visMu.Lock()
	defer tk.visMu.Unlock()
	tk.storeVisibility(v)
}

// storeVisibility installs v; tk.visMu must be held, so that AddVisibility's
// read and write are not split by another writer.
func (tk *Toolkit) storeVisibility(v Visibility) {
	if v == nil {
		tk.vis.Store(nil)
		return
	}
	tk.vis.Store(&v)
}

// AddVisibility adds v after the visibility already installed: a session's
// tools go through each in turn, and a call must be allowed by all. Package
// skills adds its own after package groups'.
func (tk *Toolkit) AddVisibility(v Visibility) {
	if v == nil {
		return
	}
	tk.visMu.Lock()
	defer tk.visMu.Unlock()
	cur := tk.visibility()
	if cur == nil {
		tk.storeVisibility(v)
		return
	}
	var c chain
	if prev, ok := cur.(chain); ok {
		c = append(c, prev...)
	} else {
		c = append(c, cur)
	}
	tk.storeVisibility(append(c, v))
}

// chain applies visibilities in order.
type chain []Visibility

func (c chain) Tools(ctx context.Context, s *Session, tools []*Tool) ([]*Tool, error) {
	for _, v := range c {
		var err error
		if tools, err = v.Tools(ctx, s, tools); err != nil {
			return nil, err
		}
	}
	return tools, nil
}

func (c chain) Resolve(ctx context.Context, s *Session, t *Tool) (*Tool, error) {
	for _, v := range c {
		var err error
		if t, err = v.Resolve(ctx, s, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (c chain) SessionClosed(session string) {
	for _, v := range c {
		if sc, ok := v.(sessionCloser); ok {
			sc.SessionClosed(session)
		}
	}
}

func (tk *Toolkit) visibility() Visibility {
	if p := tk.vis.Load(); p != nil {
		return *p
	}
	return nil
}

// Definitions returns the definitions of the tools this session may call
// now, ready for an LLM request.
func (s *Session) Definitions(ctx context.Context) ([]Definition, error) {
	tools, err := s.Tools(ctx)
	if err != nil {
		return nil, err
	}
	return definitions(tools), nil
}

// Tools returns the tools this session may call now.
func (s *Session) Tools(ctx context.Context) ([]*Tool, error) {
	registered := s.tk.reg.Load().order
	v := s.tk.visibility()
	if v == nil {
		return registered, nil
	}
	tools, err := v.Tools(ctx, s, registered)
	if err != nil {
		return nil, fmt.Errorf("toolkit: tools of session %q: %w", s.id, err)
	}
	return tools, nil
}
