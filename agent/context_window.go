package agent

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/toolstream/toolstream/events"
)

// EventContextCut: the context policy cut what the model is sent this
// turn (WithContextPolicy). It comes after turn_start, before the turn's
// pieces, and only when something was cut. Body ContextCut.
const EventContextCut events.Type = "context_cut"

// ContextCut is the body of a context_cut event: what this turn's request
// leaves out of the conversation.
type ContextCut struct {
	Turn int `json:"turn"`
	// Messages is how many the conversation holds, Sent how many the
	// model is sent (the summary included).
	Messages int `json:"messages"`
	Sent     int `json:"sent"`
	// Dropped messages are not sent at all; Summarized of them are
	// covered by the summary (0 without one).
	Dropped    int `json:"dropped"`
	Summarized int `json:"summarized,omitempty"`
	// SummaryError is why there is no summary when the policy asked for
	// one (the messages were dropped without it).
	SummaryError string `json:"summary_error,omitempty"`
	// Cleared tool results are sent as a note of their size instead of
	// their content. ClearedCalls are the calls whose results are cleared
	// for the first time in this run (a UI marks them as it goes).
	Cleared      int      `json:"cleared"`
	ClearedCalls []string `json:"cleared_calls,omitempty"`
	// DroppedCalls are the calls that are not sent at all (with their
	// results) for the first time in this run.
	DroppedCalls []string `json:"dropped_calls,omitempty"`
	// BytesBefore is the conversation's size (MessageBytes), BytesAfter
	// what is sent; Budget is the policy's bound in bytes (0: none).
	// BytesAfter above Budget means that the bound could not be met.
	BytesBefore int `json:"bytes_before"`
	BytesAfter  int `json:"bytes_after"`
	Budget      int `json:"budget,omitempty"`
	// Stored: the conversation itself was cut (ContextPolicy.Store).
	Stored bool `json:"stored,omitempty"`
}

// The note a cleared tool result is sent as.
const (
	clearedPrefix = "[tool result cleared to fit the context: "
	clearedSuffix = " bytes]"
)

// window is a run's context policy state, reused from turn to turn.
type window struct {
	turn    int       // the turn sent is for (0: none yet)
	of      []Message // the conversation's messages sent was cut from
	sent    []Message // what the model is sent for turn
	buf     []Message // sent when something is cut (reused)
	sizes   []int     // messageBytes of each message (reused)
	starts  []int     // where each turn begins (reused)
	notes   map[noteKey]Message
	cleared map[string]bool // calls cleared in an earlier request of the run
	dropped map[string]bool // calls dropped in an earlier request of the run

	summed            bool // a summary was asked for
	sumFrom, sumBytes int  // what it covers
	summary           string
	sumErr            error
}

// noteKey is what a cleared result's note depends on.
type noteKey struct {
	call, tool string
	size       int
	failed     bool
}

// plan is what one request sends: msgs[0] when head, the summary when
// summary, then msgs[from:] with the clearable tool results before
// clearTo cleared.
type plan struct {
	head          bool
	summary       bool
	from, clearTo int
	bytes         int
}

// contextFor returns the messages the model is sent for turn, after the
// loop's context policy (conv.Messages itself without one, or when
// nothing is cut), and sends the context_cut event.
func (l *Loop) contextFor(ctx context.Context, r *run, turn int, conv *Conversation) []Message {
	p, w := l.policy, &r.win
	if p == nil {
		return conv.Messages
	}
	if w.turn == turn && sameSlice(w.of, conv.Messages) { // a retry: the same cut
		return w.sent
	}
	msgs := conv.Messages
	w.turn, w.of, w.sent = turn, msgs, msgs
	w.measure(msgs)
	budget := p.budget()
	pl := w.plan(msgs, p, budget, -1)
	cut := ContextCut{Turn: turn, Messages: len(msgs), BytesBefore: w.total(), Budget: budget}
	head := 0
	if pl.head {
		head = 1
	}
	if p.Summarize != nil && pl.from > head {
		s, err := w.summarize(ctx, p, msgs, head, pl.from)
		if err == nil {
			// The summary needs room: more may be dropped, which it does
			// not cover; when no cut makes room, it is left out.
			if with := w.plan(msgs, p, budget, messageFraming+len(s)); with.summary {
				pl, cut.Summarized = with, w.sumFrom-head
			} else {
				err = errors.New("the summary does not fit the budget")
			}
		}
		if err != nil {
			cut.SummaryError = err.Error()
		}
	}
	if pl.from == head && !w.anyCleared(msgs, pl) {
		return msgs
	}
	w.buf = w.build(msgs, pl, &cut)
	w.sent = w.buf
	cut.Sent, cut.Dropped, cut.BytesAfter = len(w.sent), pl.from-head, pl.bytes
	if p.Store {
		conv.Messages = slices.Clone(w.sent)
		w.of, cut.Stored = conv.Messages, true
	}
	if r.sess.Observed() {
		emit(ctx, r.sess, EventContextCut, cut)
	}
	return w.sent
}

// sameSlice reports whether a and b are the same slice of the same array
// (a hook's RunInfo.Replace makes another).
func sameSlice(a, b []Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// measure finds msgs' sizes and turns (a turn begins at each message that
// is not a tool result; the first message, a user's, stands apart).
func (w *window) measure(msgs []Message) {
	w.sizes, w.starts = w.sizes[:0], w.starts[:0]
	for i := range msgs {
		w.sizes = append(w.sizes, messageBytes(&msgs[i]))
		if msgs[i].Role != RoleTool && (i > 0 || msgs[0].Role != RoleUser) {
			w.starts = append(w.starts, i)
		}
	}
}

// plan fits msgs to the policy; summary is the summary's size, -1 for
// none.
func (w *window) plan(msgs []Message, p *ContextPolicy, budget, summary int) plan {
	pl := plan{head: len(msgs) > 0 && msgs[0].Role == RoleUser}
	if pl.head {
		pl.from, pl.bytes = 1, w.sizes[0]
	}
	if summary >= 0 {
		pl.summary, pl.bytes = true, pl.bytes+summary
	}
	if p.KeepTurns > 0 && len(w.starts) > p.KeepTurns {
		pl.from = w.starts[len(w.starts)-p.KeepTurns]
	}
	for _, n := range w.sizes[pl.from:] {
		pl.bytes += n
	}
	pl.clearTo = pl.from
	last := len(msgs)
	if len(w.starts) > 0 {
		last = w.starts[len(w.starts)-1]
	}
	turn := slices.Index(w.starts, pl.from) // the first turn sent
	for budget > 0 && pl.bytes > budget {
		switch {
		case w.clearNext(msgs, &pl, last): // old results, oldest first
		case pl.from < last: // then old turns
			turn++
			for i := pl.from; i < w.starts[turn]; i++ {
				pl.bytes -= w.sentBytes(msgs, pl, i)
			}
			pl.from = w.starts[turn]
			pl.clearTo = max(pl.clearTo, pl.from)
		case w.clearNext(msgs, &pl, len(msgs)): // then the newest turn's results
		case pl.summary: // then the summary
			pl.summary, pl.bytes = false, pl.bytes-summary
		default:
			return pl // the budget cannot be met
		}
	}
	return pl
}

// clearNext clears the next tool result before end that clearing makes
// smaller, and reports whether there was one.
func (w *window) clearNext(msgs []Message, pl *plan, end int) bool {
	for ; pl.clearTo < end; pl.clearTo++ {
		if i := pl.clearTo; w.clearable(msgs, i) {
			pl.bytes -= w.sizes[i] - noteBytes(&msgs[i], w.sizes[i])
			pl.clearTo++
			return true
		}
	}
	return false
}

// clearable reports whether msgs[i] is a tool result larger than its note.
func (w *window) clearable(msgs []Message, i int) bool {
	return msgs[i].Role == RoleTool && w.sizes[i] > noteBytes(&msgs[i], w.sizes[i])
}

// sentBytes is what msgs[i] adds to the request under pl.
func (w *window) sentBytes(msgs []Message, pl plan, i int) int {
	if i < pl.clearTo && w.clearable(msgs, i) {
		return noteBytes(&msgs[i], w.sizes[i])
	}
	return w.sizes[i]
}

// total is the size of all the messages measured.
func (w *window) total() int {
	n := 0
	for _, s := range w.sizes {
		n += s
	}
	return n
}

func (w *window) anyCleared(msgs []Message, pl plan) bool {
	for i := pl.from; i < pl.clearTo; i++ {
		if w.clearable(msgs, i) {
			return true
		}
	}
	return false
}

// summarize returns the summary of msgs[head:from], asking for it only
// when that changed since the last time.
func (w *window) summarize(ctx context.Context, p *ContextPolicy, msgs []Message, head, from int) (string, error) {
	n := 0
	for _, s := range w.sizes[head:from] {
		n += s
	}
	if w.summed && w.sumFrom == from && w.sumBytes == n {
		return w.summary, w.sumErr
	}
	s, err := p.Summarize(ctx, slices.Clone(msgs[head:from]))
	if err == nil && s == "" {
		err = errors.New("the summary is empty")
	}
	if err != nil {
		s = ""
	}
	w.summed, w.sumFrom, w.sumBytes, w.summary, w.sumErr = true, from, n, s, err
	return s, err
}

// build returns the messages pl sends, and fills cut's cleared calls.
func (w *window) build(msgs []Message, pl plan, cut *ContextCut) []Message {
	sent := w.buf[:0]
	if pl.head {
		sent = append(sent, msgs[0])
	}
	if pl.summary {
		sent = append(sent, UserText(w.summary))
	}
	if w.notes == nil {
		w.notes, w.cleared, w.dropped = map[noteKey]Message{}, map[string]bool{}, map[string]bool{}
	}
	first := 0
	if pl.head {
		first = 1
	}
	for _, m := range msgs[first:pl.from] {
		for _, c := range m.Calls {
			if !w.dropped[c.ID] {
				w.dropped[c.ID] = true
				cut.DroppedCalls = append(cut.DroppedCalls, c.ID)
			}
		}
	}
	for i := pl.from; i < len(msgs); i++ {
		m := msgs[i]
		if i < pl.clearTo && w.clearable(msgs, i) {
			key := noteKey{m.CallID, m.Tool, w.sizes[i], m.IsError}
			note, ok := w.notes[key]
			if !ok {
				note = Message{Role: RoleTool, CallID: m.CallID, Tool: m.Tool, IsError: m.IsError,
					Content: []events.Part{events.Text(clearedPrefix + strconv.Itoa(contentBytes(&m, w.sizes[i])) + clearedSuffix)}}
				w.notes[key] = note
			}
			m = note
			cut.Cleared++
			if !w.cleared[m.CallID] {
				w.cleared[m.CallID] = true
				cut.ClearedCalls = append(cut.ClearedCalls, m.CallID)
			}
		}
		sent = append(sent, m)
	}
	return sent
}

// contentBytes is the size of a tool message's result (size is its
// messageBytes).
func contentBytes(m *Message, size int) int {
	return size - messageFraming - len(m.CallID) - len(m.Tool)
}

// noteBytes is the messageBytes of the note a tool message is cleared to.
func noteBytes(m *Message, size int) int {
	return messageFraming + len(m.CallID) + len(m.Tool) + len(clearedPrefix) + digits(contentBytes(m, size)) + len(clearedSuffix)
}

func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}
