package toolkit

import "context"

// SessionFrom returns the session of the call running with ctx, for tools
// that keep per-session state or send session-level events: unlike
// [Toolkit.Session], it never opens a session again that was closed while
// the call ran.
func SessionFrom(ctx context.Context) (*Session, bool) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return nil, false
	}
	return c.batch.sess, true
}

// Closed reports whether [Session.Close] was called. A tool that stores
// per-session state outside the session checks it after storing, so that
// state written while the session closed does not outlive it.
func (s *Session) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
