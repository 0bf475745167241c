package toolkit

import (
	"context"
	"fmt"
	"time"

	"github.com/toolstream/toolstream/events"
)

// extResult is what Session.Submit (or Session.Close) hands a waiting
// external call.
type extResult struct {
	state events.State
	parts []events.Part
	err   error
}

// waitExternal parks a call of an external tool until Session.Submit, its
// deadline or the batch's end.
func (c *call) waitExternal(ctx context.Context, attempt int) Outcome {
	// Registration, the suspend event and the notice happen under c.mu, and
	// Submit needs the registration: so the notice always comes first.
	c.mu.Lock()
	if c.side == nil {
		c.side = &aside{} // begin makes it for every call that may get here
	}
	if c.side.ext == nil {
		c.side.ext = make(chan extResult, 1)
	}
	ext := c.side.ext
	if err := c.batch.sess.suspend(c); err != nil {
		c.mu.Unlock()
		if err == ErrClosed {
			// The session was closed while the batch ran: nobody can
			// Submit, and the call ends like those that waited at Close.
			return c.out.outcome(attempt, events.StateInterrupted, events.Part{}, nil, closedWaitErr(c.call.Name))
		}
		return c.out.outcome(attempt, events.StateError, events.Part{}, nil, &callError{kind: ErrInvalidCall, cause: err,
			msg: fmt.Sprintf("call %q of tool %q cannot be suspended: %v", c.call.ID, c.call.Name, err)})
	}
	if hooks := c.waitHooks(); len(hooks) > 0 {
		// Registered first, so that an answer the hooks make possible is
		// taken (it waits in ext); announced after them.
		c.mu.Unlock()
		callWaitHooks(hooks, "external")
		c.mu.Lock()
	}
	c.announceSuspension("external")
	c.mu.Unlock()
	c.makeWay() // waiting outside uses no local capacity
	select {
	case r := <-ext:
		return c.checkOutput(c.out.outcome(attempt, r.state, events.Part{}, r.parts, r.err))
	case <-ctx.Done():
		if !c.batch.sess.unsuspend(c) {
			// Submit (or Session.Close) took the call just in time and is
			// handing it its result: it wins, so that Submit never reports
			// success for a result nobody gets, and no result stays in the
			// channel for a later attempt.
			hookExtTaken()
			r := <-ext
			return c.checkOutput(c.out.outcome(attempt, r.state, events.Part{}, r.parts, r.err))
		}
		state, err := c.ctxFailure(ctx, nil)
		return c.out.outcome(attempt, state, events.Part{}, nil, err)
	}
}

// endExternalWait takes a call that waits for Session.Submit out of its
// session and hands its wait the ending (call.abandon), as Session.Close
// does; a call that does not wait there is left alone.
func (c *call) endExternalWait(state events.State, err error) {
	if c.batch.sess.unsuspend(c) { // an external tool's, or one an Unknown interceptor aliased to it
		c.side.ext <- extResult{state: state, err: err} // room: only who unsuspends sends
	}
}

// announceSuspension emits the suspend event and the batch's notice. c.mu must
// be held. A call reported already (abandoned while code around it ran)
// announces nothing: its result was its last event.
func (c *call) announceSuspension(reason string) {
	if c.out.finished {
		return
	}
	if c.side == nil {
		c.side = &aside{}
	}
	c.side.waiting = reason
	if c.out.emits() {
		ev, body := newEvent[events.Suspend](&c.out, events.TypeSuspend)
		body.Reason = reason
		ev.Suspend = body
		c.out.dispatch(ev, nil)
	}
	c.batch.notifySuspended(c)
}

// suspend implements Invocation.Suspend.
func (c *call) suspend(reason string) (context.Context, func() context.Context) {
	st := c.stage
	if c.out.final() {
		// Reported already (left behind at its grace period): a wait now
		// changes nothing and tells nobody (OnWait hooks, observers, the
		// batch's notices); it is over at once, and so is the resume.
		over := c.overScope()
		return over, func() context.Context { return over }
	}
	wait := st.callScope(c, 0) // no deadline: only the run's end (or Session.Close) stops a wait
	c.batch.sess.holdWait(wait)
	c.tellWait(reason)
	c.mu.Lock()
	c.cur = wait
	c.announceSuspension(reason)
	c.mu.Unlock()
	c.makeWay()
	return wait, func() context.Context {
		c.batch.sess.dropWait(wait)
		if c.out.final() {
			return c.overScope() // reported while it waited: the call does not go on, nobody is told
		}
		c.tellWait("")
		s := st.callScope(c, c.timeout) // the deadline starts after the hooks
		c.mu.Lock()
		c.cur = s
		c.side.waiting = ""
		c.mu.Unlock()
		return s
	}
}

// overScope returns a scope of the call that is over already: what a wait
// or a resume of a call reported already gets.
func (c *call) overScope() *scope {
	over := new(scope)
	over.init(c.stage, 0, time.Now())
	over.call = c
	over.cancel(context.Canceled, nil)
	return over
}

// waitHooks returns the call's OnWait hooks. c.mu must be held; call them
// without it.
func (c *call) waitHooks() []*func(string) {
	if c.ic == nil {
		return nil
	}
	return c.ic.onWait
}

// tellWait calls the call's OnWait hooks with reason; c.mu must not be
// held.
func (c *call) tellWait(reason string) {
	c.mu.Lock()
	hooks := c.waitHooks()
	c.mu.Unlock()
	callWaitHooks(hooks, reason)
}

func callWaitHooks(hooks []*func(string), reason string) {
	for _, f := range hooks {
		(*f)(reason)
	}
}
