package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// call sends one call and follows it to its end; a call refused as busy is
// sent again, with a new inbox, until its deadline or the bound WithBusyRetries set.
func (c *Client) call(ctx context.Context, tool, subject string, args json.RawMessage) ([]events.Part, error) {
	info, ok := toolkit.CallInfoFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("remote: tool %q runs only as a call of a toolkit", tool)
	}
	em := stream.From(ctx)
	for attempt := 0; ; attempt++ {
		parts, err := c.send(ctx, info, tool, subject, args, em)
		if !errors.Is(err, ErrBusy) || c.opts.busyRetries >= 0 && attempt >= c.opts.busyRetries {
			if errors.Is(err, ErrBusy) {
				err = fmt.Errorf("%w (tried %d times)", err, attempt+1)
			}
			return parts, err
		}
		wait := busyBackoff(attempt) + rand.N(5*time.Millisecond)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			// No worker would take it before its deadline: the refusal is
			// the answer.
			return nil, fmt.Errorf("%w (tried %d times, until its deadline)", err, attempt+1)
		}
		backoffHook(c)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-c.r.closed:
			t.Stop()
			// Nothing is sent once the client is closed: no one would
			// follow the call.
			return nil, fmt.Errorf("remote: the call of %q, refused as busy, was not sent again: %w", tool, ErrClientClosed)
		case <-t.C:
		}
		c.stats.resent.Add(1)
	}
}

// send makes one send of the call and follows it.
func (c *Client) send(ctx context.Context, info toolkit.CallInfo, tool, subject string, args json.RawMessage, em *stream.Emitter) ([]events.Part, error) {
	inbox, ch, done, err := c.open()
	if errors.Is(err, ErrClientClosed) {
		return nil, fmt.Errorf("remote: calling %q: %w", tool, err)
	}
	if err != nil {
		return nil, interceptors.Transient(fmt.Errorf("remote: calling %q: %w", tool, err))
	}
	defer done()
	m := nats.NewMsg(subject)
	m.Reply = inbox
	m.Data = args
	setID(m.Header, wire.HeaderSession, wire.HeaderSessionQuoted, info.Session)
	setID(m.Header, wire.HeaderCall, wire.HeaderCallQuoted, info.CallID)
	if info.Agent != "" {
		m.Header.Set(wire.HeaderAgent, info.Agent)
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		m.Header.Set(wire.HeaderTimeout, msHeader(left))
	}
	if c.opts.heartbeat != defaultHeartbeat {
		m.Header.Set(wire.HeaderHeartbeat, msHeader(c.opts.heartbeat))
	}
	c.opts.inject(ctx, m.Header)
	if err := c.nc.PublishMsg(m); err != nil {
		return nil, interceptors.Transient(fmt.Errorf("remote: sending the call of %q: %w", tool, err))
	}
	c.stats.sent.Add(1)
	f := follower{c: c, tool: tool, inbox: inbox, ch: ch, em: em, next: 1}
	return f.follow(ctx)
}

// maxBusyBackoff bounds the wait before a call refused as busy is sent
// again: it doubles from 5 ms, and stays short however long the call may
// wait.
const maxBusyBackoff = 200 * time.Millisecond

func busyBackoff(attempt int) time.Duration {
	if attempt >= 6 { // 5 ms << 6 = 320 ms; also keeps the shift from overflowing
		return maxBusyBackoff
	}
	return min(time.Duration(5<<attempt)*time.Millisecond, maxBusyBackoff)
}

// follower follows one send: its frames, its worker's heartbeats, the
// caller's cancellation. The first worker that answers binds the send:
// from then on, only its frames count.
type follower struct {
	c       *Client
	tool    string
	inbox   string
	ch      *mailbox
	em      *stream.Emitter
	worker  string             // the worker the send is bound to, once one answered
	next    uint64             // the frame number expected next
	others  []string           // other workers that took the same send (told to stop)
	gap     bool               // a frame was lost: the result frame's content is the truth
	routed  uint64             // the client's routed count when the last silence began
	relayed events.Reassembler // what reached the engine, to compare with the result

	// A part too large for one message comes in chunks (HeaderChunk): its
	// JSON so far, the index due next, the count, and whether its first
	// chunk started the content over. count is 0 outside a run.
	chunks     []byte
	chunkNext  int
	chunkCount int
	chunkReset bool
}

func (f *follower) follow(ctx context.Context) ([]events.Part, error) {
	lost := f.c.lostAfter()
	timer := time.NewTimer(lost)
	defer timer.Stop()
	f.routed = f.c.r.routed.Load()
	for {
		select {
		case <-ctx.Done():
			return nil, f.cancel()
		case <-timer.C:
			// The time it took to handle the last frame (the agent's engine
			// and its inline observers) is not the worker's silence: a frame
			// that came meanwhile says it is alive.
			m := f.ch.take()
			if m == nil {
				if err := f.silent(lost); err != nil {
					return nil, err
				}
				timer.Reset(lost)
				continue
			}
			timer.Reset(lost)
			if done, parts, err := f.frame(m); done {
				return parts, err
			}
		case <-f.c.r.closed:
			return nil, fmt.Errorf("remote: the call of %q: %w (the worker may still run it)", f.tool, ErrClientClosed)
		case <-f.ch.ready:
			m := f.ch.take()
			if m == nil {
				continue
			}
			timer.Reset(lost)
			if done, parts, err := f.frame(m); done {
				return parts, err
			}
		}
	}
}

// silent decides what a silence of lost means: nil to wait on. The agent's
// own connection being away is not the worker's silence (the call waits,
// bounded by its deadline); nor is the time since a reconnection, whose
// resync the worker answers; a closed connection ends the wait.
func (f *follower) silent(lost time.Duration) error {
	switch f.c.nc.Status() {
	case nats.CLOSED:
		return &LostError{Worker: f.worker, Tool: f.tool, After: lost, Conn: "closed"}
	case nats.CONNECTED, nats.DRAINING_SUBS, nats.DRAINING_PUBS:
	default:
		return nil // reconnecting
	}
	if e := f.c.r.epochNow(); e != f.ch.epoch {
		f.ch.epoch = e
		return nil
	}
	// No worker has taken the send yet, but workers answered other calls
	// of this client meanwhile: a spike's send waits unread in a busy
	// worker's backlog (NATS hands a worker its requests one by one), as
	// it would in the worker's queue. It waits on, bounded by its deadline.
	if n := f.c.r.routed.Load(); f.worker == "" && n != f.routed {
		f.routed = n
		return nil
	}
	return &LostError{Worker: f.worker, Tool: f.tool, After: lost}
}

// drop counts a message that is not the send's frame.
func (f *follower) drop() { f.c.stats.dropped.Add(1) }

// bind decides whether a message is the send's: the first that names a
// worker binds the send to it; a message that names no worker, or another
// worker, is dropped. Another worker's frame means two queue groups serve
// the tool and both took the send: that one is told to stop.
func (f *follower) bind(m *nats.Msg) bool {
	w := m.Header.Get(wire.HeaderWorker)
	switch {
	case w == "":
		f.drop()
		return false
	case f.worker == "":
		f.worker = w
		return true
	case w == f.worker:
		return true
	}
	f.drop()
	if m.Header.Get(micro.ErrorCodeHeader) == "" && m.Header.Get(wire.HeaderFrame) != "" && !slices.Contains(f.others, w) {
		f.others = append(f.others, w)
		f.gap = true // their frames mixed: the result frame is the content
		f.c.sendControl(wire.ControlCancel, w, wire.CallKey(f.inbox))
	}
	return false
}

// noResponders reports the server's "no responders" status: nobody
// subscribed to the call's subject got the send.
func noResponders(m *nats.Msg) bool {
	return m.Header.Get("Status") == "503" && len(m.Data) == 0 && m.Header.Get(wire.HeaderFrame) == ""
}

// frame handles one message; done says the send is over.
func (f *follower) frame(m *nats.Msg) (done bool, parts []events.Part, err error) {
	if noResponders(m) {
		if f.worker != "" {
			f.drop() // a worker answered: it is not the server's, whoever sent it
			return
		}
		return true, nil, interceptors.Transient(fmt.Errorf("remote: %w %q (no responders on %s)", ErrNoWorkers, f.tool, m.Subject))
	}
	if !f.bind(m) {
		return
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		desc := m.Header.Get(micro.ErrorHeader)
		if code == codeBusy {
			return true, nil, interceptors.Transient(fmt.Errorf("remote: %w: %s", ErrBusy, desc))
		}
		return true, nil, fmt.Errorf("remote: worker %s refused the call (%s): %s", f.worker, code, desc)
	}
	kind := m.Header.Get(wire.HeaderFrame)
	if kind == frameCancel {
		return // the answer to a cancellation, which only cancel waits for
	}
	seq := frameSeq(m)
	if seq != f.next {
		f.gap = true
	}
	f.next = seq + 1
	switch kind {
	case frameProgress:
		f.progress(m)
	case frameDelta:
		f.delta(m)
	case frameResult:
		var r wireResult
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return true, nil, fmt.Errorf("remote: worker %s sent a result that does not decode: %v", f.worker, err)
		}
		parts, err := f.settle(&r)
		return true, parts, err
	}
	return
}

func (f *follower) progress(m *nats.Msg) {
	if !f.em.Listening() {
		return
	}
	var p wireProgress
	if json.Unmarshal(m.Data, &p) != nil {
		return
	}
	frac := -1.0
	if p.Fraction != nil {
		frac = *p.Fraction
	}
	if len(p.Data) > 0 {
		f.em.Report(p.Message, frac, p.Data)
	} else {
		f.em.Report(p.Message, frac, nil)
	}
}

func (f *follower) delta(m *nats.Msg) {
	if f.gap {
		return
	}
	data, reset := m.Data, m.Header.Get(wire.HeaderReset) != ""
	if c := m.Header.Get(wire.HeaderChunk); c != "" || f.chunkCount > 0 {
		whole, ok := f.chunk(c, data, reset)
		if !ok {
			f.gap = true // a chunk missing or out of place
			return
		}
		if whole == nil {
			return // more chunks to come
		}
		data, reset = whole, f.chunkReset
		f.chunks, f.chunkNext, f.chunkCount, f.chunkReset = nil, 0, 0, false
	}
	var p events.Part
	if json.Unmarshal(data, &p) != nil {
		f.gap = true
		return
	}
	if reset {
		if f.em.Reset() == nil {
			f.relayed = events.Reassembler{}
		}
	}
	if f.em.Part(p) == nil {
		// A Reassembler adds text deltas in linear time, where
		// AppendPart copies the text so far for each.
		f.relayed.Add(&events.Event{Type: events.TypeDelta, Delta: &p})
	}
}

// chunk takes one chunk of a part: the part's JSON once its last chunk
// came, nil before; ok is false when the chunk is not the one due (or a
// plain delta came in the middle of a run).
func (f *follower) chunk(h string, data []byte, reset bool) (whole []byte, ok bool) {
	i, n, ok := parseChunk(h)
	if !ok {
		return nil, false
	}
	if f.chunkCount == 0 {
		if i != 0 {
			return nil, false
		}
		f.chunkCount, f.chunkReset = n, reset
	} else if i != f.chunkNext || n != f.chunkCount {
		return nil, false
	}
	f.chunks = append(f.chunks, data...)
	f.chunkNext++
	if f.chunkNext < f.chunkCount {
		return nil, true
	}
	return f.chunks, true
}

// settle makes the call's content the worker's. What was relayed stands
// when it is the content, or a beginning of it: the rest is emitted (a
// worker sends a call's last deltas in its result frame, and a call that
// ends at once its whole content); otherwise (a lost frame, mixed frames)
// the content starts over with the result's.
func (f *follower) settle(r *wireResult) ([]events.Part, error) {
	var rerr error
	if r.State != events.StateSuccess {
		rerr = &WorkerError{Worker: f.worker, Tool: f.tool, State: r.State, Message: r.Error}
		if r.Transient {
			rerr = interceptors.Transient(rerr) // the tool vouched for it on the worker
		}
	}
	relayed := f.relayed.Content()
	want := r.Content
	if r.Omitted {
		if len(f.others) > 0 {
			return nil, fmt.Errorf("remote: worker %s's result of %q was larger than one NATS message, and workers %s took the call too: their frames mixed, the content cannot be put together (the tool's workers are in different queue groups)", f.worker, f.tool, strings.Join(f.others, ", "))
		}
		if f.gap || f.chunkCount > 0 {
			return nil, fmt.Errorf("remote: worker %s's result of %q was larger than one NATS message and some of its pieces were lost", f.worker, f.tool)
		}
		want = relayed
	} else if rerr != nil {
		want = withoutErrorLine(want, r.Error)
	}
	var out []events.Part
	if f.em == nil {
		out = want // no engine to stream to: return the content
	} else if rest, ok := contentRest(relayed, want); ok {
		for _, p := range rest {
			if err := f.em.Part(p); err != nil {
				return nil, err
			}
		}
	} else {
		if err := f.em.Reset(); err != nil {
			return nil, err
		}
		for _, p := range want {
			if err := f.em.Part(p); err != nil {
				return nil, err
			}
		}
	}
	for k, v := range r.Meta {
		f.em.SetMeta(k, v)
	}
	if r.MetaOmitted {
		f.em.SetMeta(MetaOmitted, true)
	}
	if f.worker != "" {
		f.em.SetMeta(MetaWorker, f.worker)
	}
	if len(f.others) > 0 {
		f.em.SetMeta(MetaAlsoTakenBy, f.others)
	}
	return out, rerr
}

// contentRest returns the parts that, added after relayed by the one rule
// of deltas (events.AppendPart), make want; ok is false when relayed is not
// a beginning of want. Both are content as AppendPart builds it: adjacent
// texts merged, no empty parts.
func contentRest(relayed, want []events.Part) (rest []events.Part, ok bool) {
	n := len(relayed)
	if n == 0 {
		return want, true
	}
	if n > len(want) {
		return nil, false
	}
	for i := range n - 1 {
		if !relayed[i].Equal(want[i]) {
			return nil, false
		}
	}
	last, w := relayed[n-1], want[n-1]
	if last.Equal(w) {
		return want[n:], true
	}
	if last.Type != events.PartText || w.Type != events.PartText || !strings.HasPrefix(w.Text, last.Text) {
		return nil, false
	}
	rest = make([]events.Part, 0, len(want)-n+1)
	rest = append(rest, events.Text(w.Text[len(last.Text):]))
	return append(rest, want[n:]...), true
}

// withoutErrorLine takes the engine's "Error: <msg>" line off the end of a
// failed call's content: the caller's engine adds it again.
func withoutErrorLine(content []events.Part, msg string) []events.Part {
	if len(content) == 0 || msg == "" {
		return content
	}
	last := content[len(content)-1]
	line := "Error: " + msg
	if last.Type != events.PartText || !strings.HasSuffix(last.Text, line) {
		return content
	}
	out := slices.Clone(content[:len(content)-1])
	if rest := strings.TrimSuffix(last.Text, line); rest != "" {
		out = append(out, events.Text(rest))
	}
	return out
}

// cancel tells the workers to stop the call and waits a little for the one
// that holds it to confirm, so that its handler has stopped when the
// call's result says so. The cancellation names the call by its key, never
// its inbox; every worker of the service receives it and only the holder
// acts.
func (f *follower) cancel() error {
	f.c.sendControl(wire.ControlCancel, "", wire.CallKey(f.inbox))
	wait := time.NewTimer(f.c.opts.cancelWait)
	defer wait.Stop()
	taken := false // the worker answered that it is stopping the call
	for {
		select {
		case <-f.c.r.closed:
			return ErrClientClosed
		case <-wait.C:
			switch {
			case f.worker == "":
				return fmt.Errorf("no worker confirmed the cancellation within %v (none had answered the call)", f.c.opts.cancelWait)
			case taken:
				return fmt.Errorf("worker %s is stopping the call, but its handler had not returned within %v", f.worker, f.c.opts.cancelWait)
			}
			return fmt.Errorf("worker %s did not confirm within %v", f.worker, f.c.opts.cancelWait)
		case <-f.ch.ready:
			m := f.ch.take()
			if m == nil {
				continue
			}
			if noResponders(m) {
				if f.worker == "" {
					return errors.New("no worker had taken the call")
				}
				f.drop()
				continue
			}
			if !f.bind(m) {
				continue
			}
			if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
				return fmt.Errorf("worker %s refused the call (%s): %s", f.worker, code, m.Header.Get(micro.ErrorHeader))
			}
			switch m.Header.Get(wire.HeaderFrame) {
			case frameCancel:
				taken = true
			case frameResult:
				// A result that was on its way when the caller cancelled says
				// the call ended on its own: the cancellation stopped nothing.
				var r wireResult
				switch {
				case json.Unmarshal(m.Data, &r) != nil:
				case r.NotRun:
					return fmt.Errorf("worker %s dropped the call, which waited for a free slot and never ran", f.worker)
				case r.State != "" && r.State != events.StateInterrupted && r.State != events.StateTimeout:
					return fmt.Errorf("worker %s had finished the call (%s) before the cancellation reached it", f.worker, r.State)
				}
				return fmt.Errorf("worker %s stopped the call", f.worker)
			}
		}
	}
}
