package toolkit

import (
	"context"
	"sync"
)

type runKey struct{}

// run is one run of a session: the batches started with the context
// [Session.BeginRun] returned, and the run locals they share.
type run struct {
	sess   *Session
	outer  *run // the run whose context this one was opened on, if any
	locals localStore
}

// BeginRun opens a run of the session: the batches started with the
// returned context (and contexts made from it) belong to it, and share its
// run locals ([NewRunLocal]) until end, which drops them. A run is what an
// agent means by one: the turns of one task, from the user's message to
// the answer. agent.Loop.Run opens one per run, so that a limit per run
// (interceptors.PerRun) counts the calls of every turn. Call end when the
// run is over; it may be called more than once.
//
// A batch started without a run of its session on its context (a plain
// [Session.Run]) is a run of its own: its run locals are its batch's. Runs
// nest: a run opened on a context that already holds one (a sub-agent's,
// from inside a call) is a new run, and batches of the session find the
// innermost run of their own session.
func (s *Session) BeginRun(ctx context.Context) (context.Context, func()) {
	if ctx == nil {
		return nil, func() {} // the batches report the nil context
	}
	outer, _ := ctx.Value(runKey{}).(*run)
	r := &run{sess: s, outer: outer}
	var once sync.Once
	return context.WithValue(ctx, runKey{}, r), func() { once.Do(r.locals.clear) }
}

// runStore returns the locals of the batch's run: the innermost run of its
// session on the batch's context, or the batch itself.
func (b *Batch) runStore(create bool) *localStore {
	r, _ := b.parent.Value(runKey{}).(*run)
	for ; r != nil; r = r.outer {
		if r.sess == b.sess {
			return &r.locals
		}
	}
	return b.localStore(create)
}
