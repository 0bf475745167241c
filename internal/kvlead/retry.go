package kvlead

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// hedge is how long a request goes unanswered before the same one is
	// sent again: during an election nobody answers a read, and a request
	// the dead leader took is never answered. It bounds how late a read or
	// write notices the stream's new leader.
	hedge = 250 * time.Millisecond
	// firstBackoff is the wait before sending again after an answer that
	// says "not now" ("no responders", 503); it doubles up to hedge.
	firstBackoff = 20 * time.Millisecond
	// attemptTimeout bounds one request. Requests overlap (one every
	// hedge), so it only caps how many are outstanding at once.
	attemptTimeout = 10 * time.Second
)

// policy is how try goes on: what it names in errors, how long it tries
// in all, and how long an attempt goes unanswered before another is made.
type policy struct {
	name        string
	wait, hedge time.Duration
}

// try sends a request (attempt) until an answer that is not transient,
// under ctx and the bucket's wait. It keeps earlier requests outstanding
// while it sends later ones: whichever is answered first counts. When a
// request has gone unanswered for a while, stuck (if not nil) may end it
// with an error of its own (a permission the connection lacks). unsure
// reports, when it gives up, that a request may have been acted on (one was
// unanswered): a write's fate is unknown.
func try[T any](ctx context.Context, p policy, stuck func() error, attempt func(context.Context) (T, error)) (v T, unsure bool, err error) {
	bound, cancel := context.WithTimeout(ctx, p.wait)
	maxOutstanding := max(int(attemptTimeout/p.hedge), 1)
	type answer struct {
		v   T
		err error
	}
	answers := make(chan answer, maxOutstanding)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // every request has ended: nothing outlives the call
	}()
	outstanding := 0
	send := func() {
		outstanding++
		wg.Go(func() {
			actx, cancel := context.WithTimeout(bound, attemptTimeout)
			defer cancel()
			v, err := attempt(actx)
			answers <- answer{v, err}
		})
	}
	var last error
	backoff := firstBackoff
	next := time.NewTimer(p.hedge)
	defer next.Stop()
	send()
	for {
		select {
		case a := <-answers:
			outstanding--
			if a.err == nil || !Transient(a.err) {
				return a.v, false, a.err
			}
			if isTimeout(a.err) || isInProcess(a.err) {
				unsure = true // a request may be applied yet
			}
			if bound.Err() == nil {
				last = a.err
			}
			if outstanding == 0 {
				next.Reset(backoff)
				backoff = min(2*backoff, p.hedge)
			}
		case <-next.C:
			if stuck != nil && outstanding > 0 {
				if err := stuck(); err != nil {
					var zero T
					return zero, false, err
				}
			}
			if outstanding < maxOutstanding {
				send()
			}
			next.Reset(p.hedge)
		case <-bound.Done():
			var zero T
			return zero, unsure || outstanding > 0, p.gaveUp(ctx, last)
		}
	}
}

// gaveUp is the error of a read or write that got no answer in time.
func (p policy) gaveUp(ctx context.Context, last error) error {
	why := context.Cause(ctx)
	if ctx.Err() == nil {
		why = fmt.Errorf("no answer within %v: %w", p.wait, context.DeadlineExceeded)
	}
	if last != nil {
		why = fmt.Errorf("%w (last: %w)", why, last)
	}
	if p.name == "" {
		return why
	}
	return fmt.Errorf("bucket %s: %w", p.name, why)
}

// Transient reports whether an answer (or its absence) says only that the
// stream cannot answer now: it has no leader yet, the request or its
// answer was lost, or a request with the same message id is still being
// applied. Anything else (a wrong revision, a bucket that is gone, a
// permission) is an answer.
func Transient(err error) bool {
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, errNoLeader), isTimeout(err):
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case 10008, // JetStream system temporarily unavailable (the group has no leader)
			10009, // JetStream cluster can not handle request (not the leader)
			10158, // duplicate message id is in process
			10163: // expected last sequence per subject temporarily unavailable (a new leader catching up)
			return true
		}
	}
	return false
}

// isInProcess reports the answer to a request sent again while the stream
// still applies an earlier one with the same message id.
func isInProcess(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == 10158
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.Canceled)
}

// errNoLeader: the stream answered without a leader (a member answers
// stream info for a group that has none).
var errNoLeader = errors.New("the stream has no leader")

// openHedge is how long an attempt to open a bucket goes unanswered before
// another is made: opening is several API requests, which a busy cluster
// answers more slowly than a read.
const openHedge = time.Second

// Open runs open (it opens or creates the bucket: JetStream API requests
// that the cluster's meta leader answers) until it succeeds or fails with
// an answer, through an election of the meta leader, as a read goes on
// through one of the stream's (an attempt unanswered for a second is made
// again, the first still counting), until ctx ends or wait passes (0 or
// less: DefaultWait). open must be idempotent: attempts overlap, and a
// bucket one made, whose answer was lost, is what the next finds.
func Open[T any](ctx context.Context, wait time.Duration, open func(context.Context) (T, error)) (T, error) {
	if wait <= 0 {
		wait = DefaultWait
	}
	v, _, err := try(ctx, policy{wait: wait, hedge: openHedge}, nil, open) // the caller names the bucket
	return v, err
}
