package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/toolkit"
)

// relay sends one call's frames to its caller, in order, numbered. A call
// that ends within acceptAfter and streams nothing sends one frame, its
// result: deltas wait on the worker (flushAfter) and go in the result
// frame when it comes first.
type relay struct {
	w      *Worker
	reply  string
	key    relayKey
	every  time.Duration // the caller's heartbeat interval
	ctx    context.Context
	cancel context.CancelFunc
	tool   string
	args   json.RawMessage
	h      nats.Header
	taken  time.Time
	ckey   string // wire.CallKey(reply), made when a control message first asks, under w.mu

	mu        sync.Mutex
	started   time.Time // when it began to run; zero while it waits for a slot
	seq       uint64
	spoke     bool      // a frame went: the caller knows this worker holds the call
	last      time.Time // when the last frame went
	held      []heldDelta
	heldSince time.Time
	heldBytes int
	done      bool
}

// heldDelta is a delta event waiting to go out.
type heldDelta struct {
	part  events.Part
	reset bool
}

// frameValues are the header values of the frame types, shared.
var frameValues = map[string][]string{frameAccept: {frameAccept}, frameBeat: {frameBeat},
	frameProgress: {frameProgress}, frameDelta: {frameDelta}, frameResult: {frameResult}, frameCancel: {frameCancel}}

func (r *relay) callKey() string {
	if r.ckey == "" {
		r.ckey = wire.CallKey(r.reply)
	}
	return r.ckey
}

func (r *relay) sendLocked(frame string, data []byte, h nats.Header) {
	if h == nil {
		h = make(nats.Header, 3)
	}
	r.seq++
	// The frame's and the worker's values are shared slices: nats.go only
	// reads a message's headers.
	h[wire.HeaderFrame] = frameValues[frame]
	h[wire.HeaderSeq] = []string{strconv.FormatUint(r.seq, 10)}
	h[wire.HeaderWorker] = r.w.idValue
	r.spoke = true
	r.last = time.Now()
	// Errors (a closed connection) surface to the caller as missed
	// heartbeats, or as a gap in the numbering, which the caller notices.
	// A frame the connection refuses as too large never left: it takes no
	// number, so that it leaves no gap (deltas, progress and results are
	// made to fit: flushHeld, event, finish).
	if err := r.w.nc.PublishMsg(&nats.Msg{Subject: r.reply, Header: h, Data: data}); errors.Is(err, nats.ErrMaxPayload) {
		r.seq--
	}
}

// begin marks the call running.
func (r *relay) begin() {
	r.mu.Lock()
	r.started = time.Now()
	r.mu.Unlock()
}

// accept tells the caller at once that this worker holds the call.
func (r *relay) accept() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.spoke && !r.done {
		r.sendLocked(frameAccept, nil, nil)
	}
}

// tick sends what is due at now: the accept of a call that has run for
// acceptAfter (or waited for a slot for a heartbeat interval: a call that
// waits in a spike costs no more messages for it), a heartbeat, deltas held
// for flushAfter.
func (r *relay) tick(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if len(r.held) > 0 && now.Sub(r.heldSince) >= flushAfter {
		r.flushHeld(true)
	}
	switch {
	case !r.spoke && (!r.started.IsZero() && now.Sub(r.started) >= acceptAfter || now.Sub(r.taken) >= r.every):
		r.sendLocked(frameAccept, nil, nil)
	case r.spoke && now.Sub(r.last) >= r.every:
		r.sendLocked(frameBeat, nil, nil)
	}
}

// beat sends a heartbeat now (after a reconnection, or asked by the
// caller's resync).
func (r *relay) beat() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.sendLocked(frameBeat, nil, nil)
}

// cancelled takes the caller's cancellation: it answers with a cancel
// frame, then cancels the call's context; the result frame follows.
func (r *relay) cancelled() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	r.sendLocked(frameCancel, nil, nil)
	r.mu.Unlock()
	r.cancel()
}

// refuse hands a call that waited back to its caller: it never ran.
func (r *relay) refuse(code, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	r.w.refused.Add(1)
	h := nats.Header{wire.HeaderWorker: {r.w.id}, micro.ErrorCodeHeader: {code}, micro.ErrorHeader: {why}}
	_ = r.w.nc.PublishMsg(&nats.Msg{Subject: r.reply, Header: h})
}

func mayBeErrorLine(p events.Part, reset bool) bool {
	return p.Type == events.PartText && !reset && strings.HasPrefix(p.Text, "Error: ")
}

// flushHeld sends the deltas held back, adjacent texts as one delta. With
// keepLast, a last delta that may be the engine's error line stays: when
// the call fails, the caller's engine writes that line itself.
func (r *relay) flushHeld(keepLast bool) {
	held := r.held
	var kept []heldDelta
	if n := len(held); keepLast && n > 0 && mayBeErrorLine(held[n-1].part, held[n-1].reset) {
		held, kept = held[:n-1], held[n-1:]
	}
	limit := frameLimit(r.w.nc)
	for i := 0; i < len(held); {
		d := held[i]
		i++
		if d.part.Type == events.PartText {
			var b strings.Builder
			b.WriteString(d.part.Text)
			for i < len(held) && held[i].part.Type == events.PartText && !held[i].reset && b.Len()+len(held[i].part.Text) < limit/2 {
				b.WriteString(held[i].part.Text)
				i++
			}
			d.part = events.Text(b.String())
		}
		r.sendPart(d.part, d.reset, limit)
	}
	r.held = append(r.held[:0], kept...)
	r.heldBytes = 0
	for _, d := range r.held {
		r.heldBytes += partSize(d.part)
	}
	r.heldSince = time.Now()
}

func partSize(p events.Part) int { return len(p.Text) + len(p.JSON) + len(p.Data) }

// sendPart sends one delta frame, or several when the part is too large
// for one message: cut as the publisher cuts events (docs/events.md,
// "Large content"), a text into several text deltas, any other part into
// chunks. The pieces' envelope, left out here, makes them smaller than
// limit.
func (r *relay) sendPart(p events.Part, reset bool, limit int) {
	data, _ := p.MarshalJSON() // events' encoding, as events.Fit measures it
	if len(data) <= limit {
		r.sendDelta(data, reset, "")
		return
	}
	pieces, _, err := events.Fit(&events.Event{Type: events.TypeDelta, Delta: &p, Reset: reset}, limit)
	if err != nil {
		r.seq++ // cannot be with a limit this large: a gap, which the caller notices
		return
	}
	for _, pc := range pieces {
		if pc.Chunk != nil {
			r.sendDelta([]byte(pc.Chunk.Data), pc.Reset, strconv.Itoa(pc.Chunk.Index)+"/"+strconv.Itoa(pc.Chunk.Count))
			continue
		}
		d, _ := pc.Delta.MarshalJSON()
		r.sendDelta(d, pc.Reset, "")
	}
}

func (r *relay) sendDelta(data []byte, reset bool, chunk string) {
	var h nats.Header
	if reset || chunk != "" {
		h = nats.Header{}
		if reset {
			h.Set(wire.HeaderReset, "1")
		}
		if chunk != "" {
			h.Set(wire.HeaderChunk, chunk)
		}
	}
	r.sendLocked(frameDelta, data, h)
}

// event takes one event of the call from the worker's engine.
func (r *relay) event(ev *events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	switch ev.Type {
	case events.TypeDelta:
		if ev.Delta == nil {
			return
		}
		if len(r.held) == 0 {
			r.heldSince = time.Now()
		}
		r.held = append(r.held, heldDelta{part: *ev.Delta, reset: ev.Reset})
		r.heldBytes += partSize(*ev.Delta)
		if r.heldBytes >= flushBytes {
			r.flushHeld(true)
		}
	case events.TypeProgress:
		// Deltas written before the report go before it.
		if len(r.held) > 0 {
			r.flushHeld(true)
		}
		p := ev.Progress
		if p == nil {
			return
		}
		wp := wireProgress{Message: p.Message, Fraction: p.Fraction, Data: p.Data}
		data, _ := json.Marshal(wp)
		if limit := frameLimit(r.w.nc); len(data) > limit {
			// Too large for one message: the report goes without its data,
			// and with its message cut if need be, rather than not at all.
			wp.Data = nil
			if data, _ = json.Marshal(wp); len(data) > limit {
				n := max(len(wp.Message)-(len(data)-limit), 0) // each byte cut takes one or more
				for n > 0 && !utf8.RuneStart(wp.Message[n]) {
					n--
				}
				wp.Message = wp.Message[:n]
				data, _ = json.Marshal(wp)
			}
		}
		r.sendLocked(frameProgress, data, nil)
	}
}

// finish sends the result frame: the whole content when it fits in one
// message (the deltas still held back are then not sent: the result frame
// carries them), else every delta first and the result without its
// content. The frame is kept for KeepResults, to be sent again when the
// caller asks (a resync after its reconnection, a late cancellation) or
// this worker reconnects.
func (r *relay) finish(res toolkit.Result, notRun bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	wr := wireResult{State: res.State, Content: res.Content, Meta: res.Meta, NotRun: notRun}
	if wr.Content == nil {
		wr.Content = []events.Part{}
	}
	if res.Err != nil {
		wr.Error = res.Err.Error()
		wr.Transient = interceptors.IsTransient(res.Err)
	}
	wr.Timeout = res.State == events.StateTimeout
	data, err := wr.MarshalJSON()
	if err != nil { // meta that does not marshal
		wr.Meta = nil
		data, _ = wr.MarshalJSON()
	}
	limit := frameLimit(r.w.nc)
	if len(data) > limit && len(r.held) > 0 {
		// The deltas are the content: all go, but the engine's error line,
		// which the caller's engine writes.
		if n := len(r.held); res.State.IsError() && mayBeErrorLine(r.held[n-1].part, r.held[n-1].reset) &&
			r.held[n-1].part.Text == "Error: "+wr.Error {
			r.held = r.held[:n-1]
		}
		r.flushHeld(false)
	}
	r.held = nil
	data = fitResult(wr, data, limit)
	r.sendLocked(frameResult, data, nil)
	r.w.mu.Lock()
	r.w.recent.add(&kept{inbox: r.reply, data: data, seq: r.seq, at: r.last})
	r.w.mu.Unlock()
}

// fitResult makes a result frame's body fit in limit bytes: too large, it
// leaves the content out (the deltas, all sent, are the content); still too
// large, the meta; then it cuts the error text, saying so, as the events
// publisher does. A result frame that did not fit never went, and the
// caller, hearing nothing more, gave the worker up as lost.
func fitResult(wr wireResult, data []byte, limit int) []byte {
	if len(data) <= limit {
		return data
	}
	wr.Content, wr.Omitted = nil, true
	data, _ = wr.MarshalJSON()
	if len(data) > limit && wr.Meta != nil {
		wr.Meta, wr.MetaOmitted = nil, true
		data, _ = wr.MarshalJSON()
	}
	orig := wr.Error
	note := fmt.Sprintf(" [cut to fit one message: %d bytes in all]", len(orig))
	keep := len(orig) - len(note)
	for len(data) > limit && keep > 0 {
		// Each byte cut takes at least one byte of its escaped form.
		keep = max(keep-(len(data)-limit), 0)
		for keep > 0 && !utf8.RuneStart(orig[keep]) {
			keep--
		}
		wr.Error = orig[:keep] + note
		data, _ = wr.MarshalJSON()
	}
	return data
}

// maxKeptBytes bounds the result frames a worker keeps for resends.
const maxKeptBytes = 16 << 20

// recentResults are the result frames a worker sent in the last
// KeepResults, oldest first, at most maxKeptBytes. Under Worker.mu.
type recentResults struct {
	keep    time.Duration
	list    []*kept
	byInbox map[string]*kept
	bytes   int
}

type kept struct {
	inbox string
	key   string // wire.CallKey(inbox), made when first asked
	data  []byte // the result frame's body
	seq   uint64 // and number
	at    time.Time
}

func (k *kept) size() int { return len(k.data) + len(k.inbox) + 64 }

// msg makes the result frame again, to send it again.
func (k *kept) msg(worker string) *nats.Msg {
	return &nats.Msg{Subject: k.inbox, Data: k.data, Header: nats.Header{
		wire.HeaderFrame: {frameResult}, wire.HeaderSeq: {strconv.FormatUint(k.seq, 10)}, wire.HeaderWorker: {worker}}}
}

func (rr *recentResults) add(k *kept) {
	if old := rr.byInbox[k.inbox]; old != nil {
		*old = *k // the same inbox cannot come twice; keep the newest if it did
		return
	}
	rr.list = append(rr.list, k)
	rr.byInbox[k.inbox] = k
	rr.bytes += k.size()
	for rr.bytes > maxKeptBytes && len(rr.list) > 0 {
		rr.dropOldest()
	}
}

func (rr *recentResults) dropOldest() {
	k := rr.list[0]
	rr.list[0] = nil
	rr.list = rr.list[1:]
	delete(rr.byInbox, k.inbox)
	rr.bytes -= k.size()
}

func (rr *recentResults) evict(now time.Time) {
	for len(rr.list) > 0 && now.Sub(rr.list[0].at) > rr.keep {
		rr.dropOldest()
	}
	if len(rr.list) == 0 {
		rr.list = nil // let the array go
	}
}

func (rr *recentResults) empty() bool { return len(rr.list) == 0 }

// named returns the kept results of the calls whose keys are given.
func (rr *recentResults) named(keys map[string]bool, worker string) []*nats.Msg {
	var out []*nats.Msg
	for _, k := range rr.list {
		if k.key == "" {
			k.key = wire.CallKey(k.inbox)
		}
		if keys[k.key] {
			out = append(out, k.msg(worker))
		}
	}
	return out
}

// all returns every kept result.
func (rr *recentResults) all(worker string) []*nats.Msg {
	out := make([]*nats.Msg, len(rr.list))
	for i, k := range rr.list {
		out[i] = k.msg(worker)
	}
	return out
}
