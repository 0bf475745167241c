package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// RetryPolicy says how a failed model request is asked again. Only
// errors an adapter marks retryable (APIError.Retryable: rate limits,
// overload, server errors, a broken stream) are retried; the rest end the
// run at once.
type RetryPolicy struct {
	// Attempts is the most requests one turn makes, the first included;
	// 1 means no retry. 0 means the default's (4).
	Attempts int
	// Backoff is the wait before the first retry, doubled for each next
	// one, with up to 25% jitter. 0 means the default's (1 s).
	Backoff time.Duration
	// MaxWait bounds one wait. A server that asks (Retry-After) for
	// longer than this ends the run with its error instead of holding it.
	// 0 means the default's (a minute).
	MaxWait time.Duration
}

// defaultRetry is the retry policy of a Loop without WithRetry: four
// requests at most, waiting 1s, 2s, 4s (or what the server asks, up to a
// minute).
var defaultRetry = RetryPolicy{Attempts: 4, Backoff: time.Second, MaxWait: time.Minute}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = defaultRetry.Attempts
	}
	if p.Backoff <= 0 {
		p.Backoff = defaultRetry.Backoff
	}
	if p.MaxWait <= 0 {
		p.MaxWait = defaultRetry.MaxWait
	}
	return p
}

// wait returns how long to wait before retry number n (from 1), given
// what the server asked for; ok is false when the server asks for more
// than MaxWait.
func (p RetryPolicy) wait(n int, asked time.Duration) (time.Duration, bool) {
	if asked > p.MaxWait {
		return asked, false
	}
	d := p.Backoff
	for i := 1; i < n && d < p.MaxWait && d <= math.MaxInt64/2; i++ { // no overflow
		d *= 2
	}
	d = min(d, p.MaxWait)
	if j := time.Duration(rand.Int64N(int64(d)/4 + 1)); d <= math.MaxInt64-j {
		d += j
	}
	d = min(d, p.MaxWait)
	return max(d, asked), true
}

// generate asks the model for turn's reply, streaming its pieces to the
// session's observers, and retries what the policy (and the ModelFailed
// hooks) allow. The request is assembled from conv and defs, then by the
// BeforeModel hooks, once, and again only when a hook asks; every attempt
// sends the model chain a fresh copy of it.
func (l *Loop) generate(ctx context.Context, r *run, turn int, conv *Conversation, defs []toolkit.Definition) (*Reply, error) {
	sess := r.sess
	assemble := true
	for attempt := 1; ; attempt++ {
		if assemble {
			// Clipped: a hook's append must not write into the conversation.
			r.base = Request{System: conv.System, Messages: slices.Clip(l.contextFor(ctx, r, turn, conv)), Tools: slices.Clip(defs)}
			if len(l.hooks) > 0 {
				if err := l.beforeModel(ctx, &r.info, &r.base); err != nil {
					return nil, err
				}
			}
			assemble = false
		}
		st := &r.st
		*st = streamer{ctx: ctx, sess: sess, turn: turn, observed: sess.Observed(), calls: st.calls[:0], earlier: conv.Messages}
		req := &r.req
		*req = r.base
		if st.observed {
			req.Stream = r.send
		}
		reply, err := l.chained.Generate(ctx, req)
		if err == nil && reply == nil {
			err = fmt.Errorf("%s returned no reply and no error", l.describe())
		}
		if err == nil {
			err = l.nameless(reply)
		}
		if err == nil {
			r.cut = truncated(reply) // before fixCalls makes blank arguments {}
			fixCalls(reply.Calls, conv.Messages, st.renamed, r.cut)
			st.finish(reply)
			return reply, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		asked, retryable := isRetryable(err)
		if attempt >= l.retry.Attempts {
			if !retryable {
				return nil, err
			}
			return nil, fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		decision := RetryAsPolicy
		if len(l.hooks) > 0 {
			decision = l.modelFailed(ctx, &r.info, &r.base, err)
		}
		switch decision {
		case RetryGiveUp:
			return nil, fmt.Errorf("%w (not asked again: a ModelFailed hook gave up)", err)
		case RetryAsPolicy:
			if !retryable {
				return nil, err
			}
		case RetryReassemble:
			assemble = true
		}
		var wait time.Duration // a request the policy would not retry changed: no wait
		if retryable {
			var ok bool
			if wait, ok = l.retry.wait(attempt, asked); !ok {
				return nil, fmt.Errorf("%w (the server asks to wait %v, more than the retry policy's MaxWait %v)", err, asked.Round(time.Millisecond), l.retry.MaxWait)
			}
		}
		emit(ctx, sess, EventRetry, Retry{Turn: turn, Attempt: attempt, WaitMS: ms(wait), Error: err.Error()})
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (while waiting %v to retry: %w)", err, wait.Round(time.Millisecond), context.Cause(ctx))
		}
	}
}

// nameless returns a retryable error when a call of reply has no tool
// name: such a call can be neither run nor recorded (Conversation.Check
// refuses it, and so do the providers' APIs in a history), so the reply is
// malformed, like a stream cut short, and the model is asked again.
func (l *Loop) nameless(reply *Reply) error {
	for i, c := range reply.Calls {
		if c.Name == "" {
			msg := fmt.Sprintf("the reply's call %d (id %q) has no tool name", i, c.ID)
			return &APIError{Provider: l.describe(), Message: msg, Retryable: true, Err: errors.New(msg)}
		}
	}
	return nil
}

func (l *Loop) describe() string {
	if l.name != "" {
		return "model " + l.name
	}
	return "the model"
}

// streamer turns a reply's chunks into events, and makes sure that a
// model that does not stream still produces one text_delta and one
// args_delta per call, so that UIs need only the deltas. Nothing is built
// when no observer would get the events.
type streamer struct {
	ctx      context.Context // the run's: its trace context goes with the events
	sess     *toolkit.Session
	turn     int
	observed bool      // some observer gets session events (checked per attempt)
	text     bool      // some text streamed
	calls    []callRef // calls announced, by index
	earlier  []Message // the conversation before the reply
}

type callRef struct {
	id, name string
	args     bool // some arguments streamed
	// wire is the id the model announced when the loop gave the call
	// another (see fixCalls); claimed once a call of the reply took it.
	wire    string
	renamed bool
	claimed bool
}

// ref returns the entry for call i, growing the list to hold it.
func (s *streamer) ref(i int) *callRef {
	if i < 0 || i > 1<<16 {
		return &callRef{} // an index no reply has: stream it, keep nothing
	}
	for len(s.calls) <= i {
		s.calls = append(s.calls, callRef{})
	}
	return &s.calls[i]
}

func (s *streamer) send(c Chunk) {
	switch c.Kind {
	case ChunkText:
		if c.Text == "" {
			return
		}
		s.text = true
		emit(s.ctx, s.sess, EventText, TextDelta{Turn: s.turn, Delta: c.Text})
	case ChunkCall:
		ref := callRef{id: c.CallID, name: c.Name}
		if !usableID(ref.id) || s.announced(c.Index, ref.id) || usedEarlier(ref.id, s.earlier) {
			// The id fixCalls will replace: the events name the call's
			// final id from its first piece on.
			ref.wire, ref.renamed, ref.id = ref.id, true, newCallID()
		}
		*s.ref(c.Index) = ref
		emit(s.ctx, s.sess, EventArgs, ArgsDelta{Turn: s.turn, Index: c.Index, Call: ref.id, Tool: c.Name})
	case ChunkArgs:
		if c.Text == "" {
			return
		}
		ref := s.ref(c.Index)
		ref.args = true
		emit(s.ctx, s.sess, EventArgs, ArgsDelta{Turn: s.turn, Index: c.Index, Call: ref.id, Tool: ref.name, Delta: c.Text})
	}
}

// usedEarlier reports whether a call of an earlier message has id.
func usedEarlier(id string, earlier []Message) bool {
	for _, m := range earlier {
		for _, c := range m.Calls {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}

// announced reports whether a call other than number index was announced
// with id.
func (s *streamer) announced(index int, id string) bool {
	for i := range s.calls {
		if i != index && s.calls[i].id == id {
			return true
		}
	}
	return false
}

// renamed returns the id the events gave a call the model announced as
// wire and fixCalls must give another id, or "" when no announcement is
// left for it. Each announcement serves one call, in the order announced.
func (s *streamer) renamed(wire string) string {
	for i := range s.calls {
		if r := &s.calls[i]; r.renamed && !r.claimed && r.wire == wire {
			r.claimed = true
			return r.id
		}
	}
	return ""
}

// finish sends, in one piece, what the model did not stream.
func (s *streamer) finish(r *Reply) {
	if !s.observed {
		return
	}
	if !s.text && r.Text != "" {
		emit(s.ctx, s.sess, EventText, TextDelta{Turn: s.turn, Delta: r.Text})
	}
	for i, c := range r.Calls {
		// By id: the chunks may number calls in the order they began,
		// not the reply's.
		index, streamed := i, false
		for j := range s.calls {
			if s.calls[j].id == c.ID {
				index, streamed = j, s.calls[j].args
				break
			}
		}
		if !streamed {
			emit(s.ctx, s.sess, EventArgs, ArgsDelta{Turn: s.turn, Index: index, Call: c.ID, Tool: c.Name, Delta: string(c.Args)})
		}
	}
}
