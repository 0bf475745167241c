package agent

import (
	"context"
	"maps"

	"github.com/toolstream/toolstream/toolkit"
)

// runScope is what Loop.Run opens for one run: the toolkit's run (limits
// per run count its every turn) and the run's state on the context.
type runScope struct {
	conv  *Conversation
	state *runState
	end   func() // ends the toolkit's run
}

// beginRun opens the run's scope on ctx.
func beginRun(ctx context.Context, sess *toolkit.Session, conv *Conversation) (context.Context, *runScope) {
	ctx, end := sess.BeginRun(ctx)
	rs := &runState{values: maps.Clone(conv.State)}
	if ctx != nil { // a nil one fails the run's calls, which say why
		ctx = context.WithValue(ctx, stateKey{}, rs)
	}
	return ctx, &runScope{conv: conv, state: rs, end: end}
}

// saveState writes the state the batch's calls changed into the
// conversation, before anything stores it again.
func saveState(ctx context.Context, conv *Conversation) {
	if rs := stateFrom(ctx); rs != nil {
		rs.save(conv, false)
	}
}

// close ends the run: its last state goes into the conversation.
func (s *runScope) close() {
	s.state.save(s.conv, true)
	s.end()
}
