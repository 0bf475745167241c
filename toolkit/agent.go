package toolkit

import (
	"context"
	"fmt"

	"github.com/toolstream/toolstream/events"
)

type agentKey struct{}

// WithAgent returns a context carrying the id of the agent (of a
// multi-agent system) that makes the calls of a batch run with it, as
// [WithUser] carries the user: pass it to [Session.Run] or [Session.Start].
// Handlers and interceptors read it with [Agent] (and [CallInfoFrom]), and
// every event of those calls carries it (events.Event.Agent), so a UI or
// an audit can tell a sub-agent's calls from its parent's in one session.
// An id follows the rule of session ids (1 to 256 bytes of UTF-8 without
// control characters); with any other, every call of the batch fails
// before running and says why. "" means no agent.
func WithAgent(ctx context.Context, agentID string) context.Context {
	return context.WithValue(ctx, agentKey{}, agentID)
}

// Agent returns the agent id set with [WithAgent], or "".
func Agent(ctx context.Context) string {
	a, _ := ctx.Value(agentKey{}).(string)
	return a
}

// batchAgent reads the agent of a batch from its context, once: every
// event of the batch carries it. An id that breaks the rule is an error
// each call reports.
func batchAgent(ctx context.Context) (string, error) {
	a := Agent(ctx)
	if a == "" {
		return "", nil
	}
	if err := events.CheckSessionID(a); err != nil {
		return "", &callError{kind: ErrInvalidCall,
			msg: fmt.Sprintf("invalid agent id %q set with toolkit.WithAgent: %v; use 1 to %d bytes of UTF-8 without control characters",
				truncate(a, 70), err, events.MaxSessionIDLen)}
	}
	return a, nil
}
