package toolkit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errCallDeadline is the cancellation cause of a call's own deadline, which
// tells a timeout apart from the caller cancelling the batch.
var errCallDeadline = errors.New("call deadline exceeded")

// ctxFailure classifies a call whose context ctx ended: its own deadline
// (timeout) or the batch's cancellation (interrupted). handlerErr is what the
// handler returned, if it did.
func (c *call) ctxFailure(ctx context.Context, handlerErr error) (State, error) {
	name := shownName(c.call.Name)
	suffix := ""
	if handlerErr != nil {
		suffix = ": " + handlerErr.Error()
	}
	s, _ := ctx.Value(scopeKey{}).(*scope)
	ownDeadline := s != nil && s.timedOut()
	// A deadline of an interceptor's own (a per-attempt timeout) is a
	// timeout too, unless the batch itself is being stopped.
	innerDeadline := !ownDeadline && errors.Is(ctx.Err(), context.DeadlineExceeded) && c.batch.err() == nil
	if ownDeadline || innerDeadline {
		// The cause matches context.DeadlineExceeded even when the handler
		// returned an error of its own (a closed socket, say).
		cause := handlerErr
		if cause == nil {
			cause = context.DeadlineExceeded
		} else if !errors.Is(cause, context.DeadlineExceeded) {
			cause = errors.Join(context.DeadlineExceeded, cause)
		}
		after := c.timeout
		if innerDeadline {
			after = time.Since(c.startedAt()).Round(time.Millisecond)
		}
		return StateTimeout, &callError{kind: ErrTimeout, cause: cause,
			msg: fmt.Sprintf("tool %q timed out after %v%s", name, after, suffix)}
	}
	why := c.batch.err()
	if why == nil && s != nil {
		why = s.why() // a wait Session.Close ended
	}
	if why == nil {
		// Neither the batch nor the call's scope ended: an interceptor
		// ended the context it handed on (its cause says why), or asked
		// ContextFailure about one that has not ended.
		why = context.Cause(ctx)
		if why == nil {
			why = context.Canceled
		}
	}
	cause := why
	msg := fmt.Sprintf("tool %q was interrupted (%v)", name, why)
	// A handler that returns the context's error says nothing new: say it once.
	if handlerErr != nil && !errors.Is(handlerErr, why) {
		cause = errors.Join(why, handlerErr)
		msg += suffix
	}
	return StateInterrupted, &callError{kind: ErrInterrupted, cause: cause, msg: msg}
}
