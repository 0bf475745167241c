package main

import (
	"context"

	"github.com/toolstream/toolstream/agent"
)

// hooks are the demo agent's run hooks (agent.Hooks): BeforeModel notes
// how much of the conversation the model is sent (after the context
// policy, context.go), and End says how the run ended next to what the
// conversation kept: all of it, whatever the model was last sent.
func (r *runner) hooks() agent.Hooks {
	return agent.Hooks{
		BeforeModel: func(ctx context.Context, run *agent.RunInfo, req *agent.Request) error {
			r.mu.Lock()
			r.lastSent = len(req.Messages)
			r.mu.Unlock()
			return nil
		},
		End: func(ctx context.Context, run *agent.RunInfo, out *agent.Outcome, err error) {
			r.mu.Lock()
			sent := r.lastSent
			r.mu.Unlock()
			r.view.printf("  run hook End: %s after %d turns; the conversation keeps all %d messages, the model was last sent %d\n",
				out.End, out.Turns, len(run.Conversation().Messages), sent)
		},
	}
}
