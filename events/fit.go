package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// ErrTooLarge is returned by [Fit] for an event that cannot be made to fit
// in a message: a progress event (dropped instead: progress is for people),
// a session-level or other event whose data is too large, or a limit too
// small for even the envelope.
var ErrTooLarge = errors.New("events: event too large for one message")

// minPiece is the least room for content a cut event must leave: enough
// for any escaped character, so that every piece carries something.
const minPiece = 64

// Fit returns the events to publish in place of ev so that each one's JSON
// ([AppendJSON]) is at most max bytes long, whatever sequence number it is
// given. Nothing is lost where the protocol has a way to carry it
// (docs/events.md, "Large content"):
//
//   - an event that fits is returned as it is;
//   - a text delta is cut into several text deltas, on UTF-8 boundaries, in
//     order (the first one keeps Reset): they add up to the same text;
//   - any other delta is cut into chunks ([Chunk]) whose data, put
//     together, is the JSON of its part;
//   - a result leaves its content out (ContentOmitted, with its size): the
//     content is what the call's deltas add up to, and they are delivered.
//
// Where the protocol has no such way, the event is cut and lossy is true:
// a start, or an args event, leaves its arguments out (ArgsOmitted); a result whose body is
// still too large without its content leaves Meta out (MetaOmitted) and
// then cuts Error, ending it with a note of its full size. A progress event
// or an event of another type that does not fit gives [ErrTooLarge]. The
// returned events share ev's strings; ev is not changed.
func Fit(ev *Event, max int) (out []Event, lossy bool, err error) {
	probe := *ev
	probe.Seq = math.MaxUint64 // the widest sequence number any piece may get
	if !Exceeds(ev, max) && len(AppendJSON(nil, &probe)) <= max {
		return []Event{*ev}, false, nil
	}
	switch {
	case ev.Type == TypeDelta && ev.Delta != nil:
		if p := ev.Delta; p.Type == PartText && p.JSON == nil && p.Data == nil && p.MediaType == "" {
			out, err = fitText(probe, max)
		} else {
			out, err = fitChunks(probe, string(appendPart(nil, p)), max)
		}
	case ev.Type == TypeResult && ev.Result != nil:
		out, lossy, err = fitResult(probe, max)
	case ev.Type == TypeStart && ev.Start != nil:
		out, lossy, err = fitStart(probe, max)
	case ev.Type == TypeArgs && ev.Call != "":
		out, lossy, err = fitArgs(probe, max)
	case ev.Type == TypeBatchEnd && ev.Call == "":
		out, lossy, err = fitBatchEnd(probe, max)
	default:
		err = fmt.Errorf("%w: a %q event of %d bytes, at most %d allowed", ErrTooLarge, ev.Type, len(AppendJSON(nil, ev)), max)
	}
	if err != nil {
		return nil, false, err
	}
	for i := range out {
		out[i].Seq = ev.Seq
	}
	return out, lossy, nil
}

// Exceeds reports whether ev's JSON ([AppendJSON]) is surely longer than
// max, reading at most about max bytes of it: a start whose arguments alone
// are, or an args event whose data is. Encoding arguments of a hundred megabytes only to find that they do
// not fit takes a publisher seconds on a busy machine, and every other
// call's events wait behind it; [Fit] leaves them out at once. false says
// nothing: the event may still be too large.
func Exceeds(ev *Event, max int) bool {
	switch {
	case ev.Type == TypeStart && ev.Start != nil:
		return rawLonger(ev.Start.Args, max)
	case ev.Type == TypeArgs && ev.Call != "":
		return rawLonger(ev.Data, max)
	}
	return false
}

// rawLonger reports whether raw as appendRaw writes it is surely longer
// than n. appendRaw keeps every byte that is not whitespace (escapes only
// make bytes longer, and what is not JSON goes as a string of its text), so
// more than n of those settle it, whatever follows.
func rawLonger(raw []byte, n int) bool {
	if len(raw) <= n {
		return false
	}
	kept := 0
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			if kept++; kept > n {
				return true
			}
		}
	}
	return false
}

// room is what is left of max for content after the envelope env.
func room(env *Event, max int) (int, error) {
	n := max - len(AppendJSON(nil, env))
	if n < minPiece {
		return 0, fmt.Errorf("%w: the envelope of a %q event leaves %d bytes of %d for content", ErrTooLarge, env.Type, n, max)
	}
	return n, nil
}

func fitText(probe Event, max int) ([]Event, error) {
	text := probe.Delta.Text
	empty := Part{Type: PartText}
	env := probe
	env.Delta = &empty
	avail, err := room(&env, max)
	if err != nil {
		return nil, err
	}
	var out []Event
	for len(text) > 0 {
		n := cutString(text, avail)
		piece := probe
		piece.Delta = &Part{Type: PartText, Text: text[:n]}
		piece.Reset = probe.Reset && len(out) == 0
		out = append(out, piece)
		text = text[n:]
	}
	return out, nil
}

func fitChunks(probe Event, part string, max int) ([]Event, error) {
	env := probe
	env.Delta = nil
	env.Chunk = &Chunk{Index: math.MaxInt32, Count: math.MaxInt32} // the widest numbers
	avail, err := room(&env, max)
	if err != nil {
		return nil, err
	}
	var pieces []string
	for len(part) > 0 {
		n := cutString(part, avail)
		pieces = append(pieces, part[:n])
		part = part[n:]
	}
	out := make([]Event, len(pieces))
	for i, data := range pieces {
		out[i] = probe
		out[i].Delta = nil
		out[i].Chunk = &Chunk{Index: i, Count: len(pieces), Data: data}
		out[i].Reset = probe.Reset && i == 0
	}
	return out, nil
}

func fitResult(probe Event, max int) ([]Event, bool, error) {
	r := *probe.Result
	r.Content = nil
	r.ContentOmitted = true
	r.ContentSize, r.ContentParts = ContentSize(probe.Result.Content), len(probe.Result.Content)
	if probe.Result.ContentOmitted { // already omitted upstream: keep its figures
		r.ContentSize, r.ContentParts = probe.Result.ContentSize, probe.Result.ContentParts
	}
	probe.Result = &r
	if len(AppendJSON(nil, &probe)) <= max {
		return []Event{probe}, false, nil
	}
	if len(r.Meta) > 0 {
		r.Meta, r.MetaOmitted = nil, true
		if len(AppendJSON(nil, &probe)) <= max {
			return []Event{probe}, true, nil
		}
	}
	full := r.Error
	note := fmt.Sprintf(" [cut to fit one message: %d bytes in all]", len(full))
	r.Error = note
	avail := max - len(AppendJSON(nil, &probe))
	if avail < 0 {
		return nil, false, fmt.Errorf("%w: a result envelope of more than %d bytes", ErrTooLarge, max)
	}
	r.Error = full[:cutString(full, avail)] + note
	return []Event{probe}, true, nil
}

func fitStart(probe Event, max int) ([]Event, bool, error) {
	s := *probe.Start
	s.Args, s.ArgsOmitted = nil, true
	probe.Start = &s
	if n := len(AppendJSON(nil, &probe)); n > max {
		return nil, false, fmt.Errorf("%w: a start envelope of %d bytes, at most %d allowed", ErrTooLarge, n, max)
	}
	return []Event{probe}, true, nil
}

// argsOmitted is the data of an args event whose arguments were left out.
var argsOmitted = json.RawMessage(`{"args_omitted":true}`)

func fitArgs(probe Event, max int) ([]Event, bool, error) {
	probe.Data = argsOmitted
	if n := len(AppendJSON(nil, &probe)); n > max {
		return nil, false, fmt.Errorf("%w: an args envelope of %d bytes, at most %d allowed", ErrTooLarge, n, max)
	}
	return []Event{probe}, true, nil
}

// ContentSize is the size of content as a result that omits it reports it
// (Result.ContentSize): UTF-8 bytes of text parts as they go on the wire
// (each byte of invalid UTF-8 is U+FFFD there, three bytes), bytes of the
// JSON text of JSON parts as published (a JSON part that is not JSON goes as
// a JSON string of its text), decoded bytes of binary parts: the
// size of what a client rebuilds from the deltas.
func ContentSize(content []Part) int64 {
	var n int64
	for i := range content {
		p := &content[i]
		switch p.Type {
		case PartText:
			n += textWireSize(p.Text)
		case PartJSON:
			n += int64(rawWireSize(p.JSON))
		default:
			n += int64(len(p.Data))
		}
	}
	return n
}

// rawWireSize is the length of raw as appendRaw writes it: as it is when
// it is canonical JSON, else compacted, or as a JSON string of its text when
// it is not JSON at all.
func rawWireSize(raw json.RawMessage) int {
	if !needsRewrite(raw) && json.Valid(raw) {
		return len(raw)
	}
	return len(appendRaw(nil, raw))
}

// textWireSize is the length of s once decoded from the wire, where each
// byte of invalid UTF-8 became U+FFFD.
func textWireSize(s string) int64 {
	if utf8.ValidString(s) {
		return int64(len(s))
	}
	var n int64
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += int64(utf8.RuneLen(utf8.RuneError))
		} else {
			n += int64(size)
		}
		i += size
	}
	return n
}

// escLen is the length of each ASCII byte once escaped by appendString.
var escLen = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case jsonPlain[c]:
			t[c] = 1
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 2
		default:
			t[c] = 6 // \u00XX
		}
	}
	return t
}()

// cutString returns the length of the longest prefix of s, ending on a
// character boundary, whose escaped form (appendString, without the quotes)
// takes at most avail bytes. With avail >= 6 it is never 0 for a non-empty s.
func cutString(s string, avail int) int {
	used := 0
	for i := 0; i < len(s); {
		c := s[i]
		var n, size int
		if c < utf8.RuneSelf {
			n, size = int(escLen[c]), 1
		} else {
			r, sz := utf8.DecodeRuneInString(s[i:])
			size = sz
			switch {
			case r == utf8.RuneError && sz == 1:
				n = 6 // \ufffd
			case r == '\u2028' || r == '\u2029':
				n = 6
			default:
				n = sz
			}
		}
		if used+n > avail {
			return i
		}
		used += n
		i += size
	}
	return len(s)
}

// Reassembler rebuilds a call's content from its delta events, given in
// sequence order: parts add up by the rule of [AppendPart], a reset starts
// the content over, and a run of chunks ([Chunk]) becomes the part it was
// cut from. Long runs of text deltas cost linear time. The zero value is
// ready to use.
type Reassembler struct {
	parts   []Part          // the content but for a trailing text part
	tail    strings.Builder // the trailing text part, when hasTail
	hasTail bool
	chunks  []byte // the data of the current run of chunks
	next    int    // the index expected next in the run
	count   int    // the run's number of chunks; 0 outside a run
}

// Add takes the next delta event of the call; other events are ignored. An
// error says the deltas are broken (a chunk missing or out of place, chunks
// that do not make a part): the incomplete part is dropped, what came
// before it is kept, and a run starting at this event (index 0) goes on.
func (r *Reassembler) Add(ev *Event) error {
	if ev.Type != TypeDelta {
		return nil
	}
	var err error
	if ev.Reset {
		r.parts, r.hasTail = nil, false
		r.tail = strings.Builder{}
		r.dropRun()
	}
	c := ev.Chunk
	if c == nil {
		if r.count > 0 {
			err = fmt.Errorf("events: seq %d: a delta in the middle of a part's chunks (%d of %d came)", ev.Seq, r.next, r.count)
			r.dropRun()
		}
		if ev.Delta != nil {
			r.add(*ev.Delta)
		}
		return err
	}
	if r.count > 0 && (c.Index != r.next || c.Count != r.count) {
		err = fmt.Errorf("events: seq %d: chunk %d of %d where chunk %d of %d was due", ev.Seq, c.Index, c.Count, r.next, r.count)
		r.dropRun()
	}
	if r.count == 0 {
		if c.Index != 0 || c.Count < 1 {
			return errors.Join(err, fmt.Errorf("events: seq %d: chunk %d of %d without the chunks before it", ev.Seq, c.Index, c.Count))
		}
		r.count = c.Count
	}
	r.chunks = append(r.chunks, c.Data...)
	r.next++
	if r.next < r.count {
		return err
	}
	var p Part
	if e := json.Unmarshal(r.chunks, &p); e != nil {
		err = errors.Join(err, fmt.Errorf("events: seq %d: %d chunks do not make a part: %v", ev.Seq, r.count, e))
	} else {
		normalizePart(&p)
		r.add(p)
	}
	r.dropRun()
	return err
}

// add appends a part by the rule of AppendPart, keeping trailing text in a
// builder.
func (r *Reassembler) add(p Part) {
	if p.IsEmpty() {
		return
	}
	if p.Type == PartText {
		r.tail.WriteString(p.Text)
		r.hasTail = true
		return
	}
	if r.hasTail {
		r.parts = append(r.parts, Text(r.tail.String()))
		r.tail, r.hasTail = strings.Builder{}, false
	}
	r.parts = append(r.parts, p)
}

func (r *Reassembler) dropRun() {
	r.chunks, r.next, r.count = nil, 0, 0
}

// Content returns the content so far (without a part whose chunks are
// still coming). The caller may keep it: later Adds do not change it.
func (r *Reassembler) Content() []Part {
	if !r.hasTail {
		return r.parts[:len(r.parts):len(r.parts)]
	}
	return append(r.parts[:len(r.parts):len(r.parts)], Text(r.tail.String()))
}

// Pending reports whether a part's chunks are still coming.
func (r *Reassembler) Pending() bool { return r.count > 0 }
