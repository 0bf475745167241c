package events

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// ErrInvalidEvent is wrapped by the errors of [Decode] for data that is not
// a valid event.
var ErrInvalidEvent = errors.New("events: invalid event")

// ErrNewerVersion is wrapped by the error of [Decode] for an event whose
// version is newer than [Version]: the consumer needs an update.
var ErrNewerVersion = errors.New("events: unsupported newer event version")

// AppendJSON appends the event's JSON to dst: the wire form of
// docs/events.md. It is a hand-written encoder (no reflection but for
// Result.Meta) for the hot path of publishing.
//
// For every event json.Marshal accepts, the output is byte for byte what
// json.Marshal produces (Part and Result marshal through this encoder, so
// that a text part always has "text" and a result's content is an array or,
// when omitted, absent): strings are escaped the same way, and '<', '>' and
// '&' are escaped too although JSON does not need it, because json.Marshal
// also escapes them inside json.RawMessage fields and matching it there
// keeps decoded events equal. One difference: invalid UTF-8 inside a
// json.RawMessage field (or a json.RawMessage in Result.Meta), which
// json.Marshal copies as it is, becomes \ufffd for each bad byte, as
// encoding/json reads it, so that the output is always UTF-8 (as in strings,
// where json.Marshal does the same). Where json.Marshal would fail, AppendJSON
// still writes valid JSON: a json.RawMessage field that is not valid JSON
// becomes a JSON string of its bytes, a non-finite float and a time that
// RFC 3339 cannot express (year outside 0..9999) become null, and a
// Result.Meta that cannot be marshalled is left out. Result.Err is never
// encoded.
func AppendJSON(dst []byte, ev *Event) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(ev.Version), 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(ev.Type))
	dst = append(dst, `,"session":`...)
	dst = appendString(dst, ev.Session)
	if ev.Agent != "" {
		dst = append(dst, `,"agent":`...)
		dst = appendString(dst, ev.Agent)
	}
	if ev.Call != "" {
		dst = append(dst, `,"call":`...)
		dst = appendString(dst, ev.Call)
	}
	if ev.Tool != "" {
		dst = append(dst, `,"tool":`...)
		dst = appendString(dst, ev.Tool)
	}
	if ev.Seq != 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendUint(dst, ev.Seq, 10)
	}
	dst = append(dst, `,"time":`...)
	dst = appendTime(dst, ev.Time)
	if b := ev.Start; b != nil {
		dst = append(dst, `,"start":{`...)
		if len(b.Args) > 0 {
			dst = append(dst, `"args":`...)
			dst = appendRaw(dst, b.Args)
			dst = append(dst, ',')
		}
		dst = append(dst, `"index":`...)
		dst = strconv.AppendInt(dst, int64(b.Index), 10)
		if b.ArgsOmitted {
			dst = append(dst, `,"args_omitted":true`...)
		}
		dst = append(dst, '}')
	}
	if b := ev.Progress; b != nil {
		dst = append(dst, `,"progress":{`...)
		open := len(dst)
		if b.Message != "" {
			dst = appendKey(dst, open, "message")
			dst = appendString(dst, b.Message)
		}
		if b.Fraction != nil {
			dst = appendKey(dst, open, "fraction")
			dst = appendFloat(dst, *b.Fraction)
		}
		if len(b.Data) > 0 {
			dst = appendKey(dst, open, "data")
			dst = appendRaw(dst, b.Data)
		}
		if b.Dropped != 0 {
			dst = appendKey(dst, open, "dropped")
			dst = strconv.AppendUint(dst, b.Dropped, 10)
		}
		dst = append(dst, '}')
	}
	if ev.Delta != nil {
		dst = append(dst, `,"delta":`...)
		dst = appendPart(dst, ev.Delta)
	}
	if c := ev.Chunk; c != nil {
		dst = append(dst, `,"chunk":{"index":`...)
		dst = strconv.AppendInt(dst, int64(c.Index), 10)
		dst = append(dst, `,"count":`...)
		dst = strconv.AppendInt(dst, int64(c.Count), 10)
		dst = append(dst, `,"data":`...)
		dst = appendString(dst, c.Data)
		dst = append(dst, '}')
	}
	if ev.Reset {
		dst = append(dst, `,"reset":true`...)
	}
	if ev.Suspend != nil {
		dst = append(dst, `,"suspend":{"reason":`...)
		dst = appendString(dst, ev.Suspend.Reason)
		dst = append(dst, '}')
	}
	if ev.Result != nil {
		dst = append(dst, `,"result":`...)
		dst = appendResult(dst, ev.Result)
	}
	if len(ev.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = appendRaw(dst, ev.Data)
	}
	return append(dst, '}')
}

// appendKey appends `"key":`, after a comma unless it is the first member of
// the object whose '{' ends at open.
func appendKey(dst []byte, open int, key string) []byte {
	if len(dst) > open {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendResult writes a result body. Content is always an array unless it
// was omitted, then it is left out.
func appendResult(dst []byte, r *Result) []byte {
	dst = append(dst, `{"state":`...)
	dst = appendString(dst, string(r.State))
	if r.ContentOmitted {
		dst = append(dst, `,"content_omitted":true,"content_size":`...)
		dst = strconv.AppendInt(dst, r.ContentSize, 10)
		dst = append(dst, `,"content_parts":`...)
		dst = strconv.AppendInt(dst, int64(r.ContentParts), 10)
	} else {
		dst = append(dst, `,"content":`...)
		dst = appendContent(dst, r.Content)
	}
	if r.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, r.Error)
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = appendFloat(dst, r.DurationMS)
	if len(r.Meta) > 0 {
		// Arbitrary values: reflection is unavoidable, and encoding/json
		// sorts the keys.
		if m, err := json.Marshal(r.Meta); err == nil {
			if !utf8.Valid(m) { // a json.RawMessage value, copied as it is
				m = replaceInvalidUTF8(m)
			}
			dst = append(dst, `,"meta":`...)
			dst = append(dst, m...)
		}
	}
	if r.MetaOmitted {
		dst = append(dst, `,"meta_omitted":true`...)
	}
	if r.Dropped != 0 {
		dst = append(dst, `,"dropped":`...)
		dst = strconv.AppendUint(dst, r.Dropped, 10)
	}
	return append(dst, '}')
}

// appendContent writes content as a JSON array (nil too).
func appendContent(dst []byte, content []Part) []byte {
	dst = append(dst, '[')
	for i := range content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendPart(dst, &content[i])
	}
	return append(dst, ']')
}

// MarshalJSON writes the part as it goes on the wire: a text part always
// has "text", even when empty (a reset delta's part).
func (p Part) MarshalJSON() ([]byte, error) { return appendPart(nil, &p), nil }

// MarshalJSON writes the result as it goes on the wire: "content" is
// always an array, or absent when ContentOmitted is set. A Meta that
// cannot be marshalled is left out.
func (r Result) MarshalJSON() ([]byte, error) { return appendResult(nil, &r), nil }

func appendPart(dst []byte, p *Part) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, string(p.Type))
	if p.Text != "" || p.Type == PartText { // a text part always has its text, even empty
		dst = append(dst, `,"text":`...)
		dst = appendString(dst, p.Text)
	}
	if len(p.JSON) > 0 {
		dst = append(dst, `,"json":`...)
		dst = appendRaw(dst, p.JSON)
	}
	if len(p.Data) > 0 {
		dst = append(dst, `,"data":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, p.Data) // as encoding/json encodes []byte
		dst = append(dst, '"')
	}
	if p.MediaType != "" {
		dst = append(dst, `,"media_type":`...)
		dst = appendString(dst, p.MediaType)
	}
	return append(dst, '}')
}

// appendFloat writes f the way encoding/json does (the ECMAScript number to
// string rule): plain decimal notation for magnitudes in [1e-6, 1e21),
// exponent notation outside, shortest representation that round-trips.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...) // JSON has no such numbers
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// strconv pads the exponent to two digits ("1e-07"); encoding/json
		// does not ("1e-7").
		if n := len(dst); dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// jsonPlain marks the ASCII bytes written as is inside a JSON string. '<',
// '>' and '&' are escaped as encoding/json does by default (see AppendJSON).
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// jsonEscapes is how each ASCII byte is written inside a JSON string when
// it is not written as it is ("" then): encoding/json's escapes.
var jsonEscapes = func() (t [utf8.RuneSelf]string) {
	for c := range utf8.RuneSelf {
		switch {
		case jsonPlain[c]:
		case c == '"' || c == '\\':
			t[c] = `\` + string(rune(c))
		case c == '\b':
			t[c] = `\b`
		case c == '\f':
			t[c] = `\f`
		case c == '\n':
			t[c] = `\n`
		case c == '\r':
			t[c] = `\r`
		case c == '\t':
			t[c] = `\t`
		default:
			t[c] = `\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf])
		}
	}
	return t
}()

// escWord is each ASCII byte's escape (jsonEscapes) as a little-endian
// word, so that appendString stores it with one write; escLen has its length.
var escWord = func() (t [utf8.RuneSelf]uint64) {
	for c, e := range jsonEscapes {
		var w [8]byte
		copy(w[:], e)
		t[c] = binary.LittleEndian.Uint64(w[:])
	}
	return t
}()

// wordRoom is the room appendString keeps free past the input still to
// write: it stores whole words (8 bytes) before knowing how many count, and
// an escape (at most 6 bytes) as one word.
const wordRoom = 16

// maxBlockRun bounds the input one call of escapeBlocks reads (a few
// microseconds), since a goroutine cannot be preempted inside it.
const maxBlockRun = 64 << 10

// appendString writes s as a JSON string with encoding/json's escapes;
// invalid UTF-8 becomes U+FFFD. On amd64 it takes 32-byte blocks with SSE2
// (escapeBlocks) wherever it can. Elsewhere, and for what the blocks leave,
// it reads and writes 8 bytes at a time: each word of s is stored in dst as
// it is, and kept whole unless it holds a byte to look at (a few bit
// operations tell), so that a run of plain text costs no call and no copy
// of its own.
func appendString(dst []byte, s string) []byte { return escapeString(dst, s, true) }

// escapeString is appendString, with the SSE2 blocks or without them (the
// word loop alone, as other platforms run it: tests and benchmarks compare
// the two in one run).
func escapeString(dst []byte, s string, blocks bool) []byte {
	n := len(dst)
	out := growRoom(dst, len(s)+wordRoom)
	out[n] = '"'
	n++
	// A read-only view of s as bytes.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	for {
		// Escapes take more room than what they stand for.
		if len(out)-n < len(b)-i+wordRoom {
			out = growRoom(out[:n], len(b)-i+wordRoom)
		}
		// 32-byte blocks where the processor has a fast path for them
		// (escape_amd64.s), a run of at most maxBlockRun bytes per call;
		// the words below take what it leaves: a non-ASCII byte, the tail.
		for blocks && len(b)-i >= 32 {
			run := min(len(b)-i, maxBlockRun)
			r, w := escapeBlocks(&out[n], len(out)-n, &b[i], run, &escWord, &escLen)
			i += r
			n += w
			if run-r >= 32 || len(out)-n < len(b)-i+wordRoom {
				break // stopped before the end of its run: a byte, or the room
			}
		}
		if len(out)-n < len(b)-i+wordRoom {
			continue // the escapes took the room: grow it
		}
		// Words without a byte to look at. n-i does not change in this
		// loop, and the room just checked makes n+8 <= len(out) whenever
		// i+8 <= len(b): the unchecked loads and stores stay in s and out.
		if i+8 <= len(b) {
			src := unsafe.Pointer(unsafe.StringData(s))
			to := unsafe.Pointer(unsafe.SliceData(out))
			for i+8 <= len(b) {
				x := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(src, i))[:])
				binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(to, n))[:], x)
				m := specialBytes(x)
				if m == 0 {
					i += 8
					n += 8
					continue
				}
				k := bits.TrailingZeros64(m) >> 3 // exact for the lowest
				c := byte(x >> (8 * k))
				i += k
				n += k
				if c >= utf8.RuneSelf {
					break // non-ASCII: the rune decoder below
				}
				// An ASCII byte to escape, here rather than below: text
				// with a newline every line escapes every few words.
				binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(to, n))[:], escWord[c])
				i++
				n += int(escLen[c])
				if len(out)-n < len(b)-i+wordRoom {
					break // the escapes took the room: grow it
				}
			}
		}
		if i >= len(b) {
			break
		}
		if c := b[i]; c < utf8.RuneSelf {
			i++
			if escLen[c] == 1 {
				out[n] = c
				n++
				continue
			}
			binary.LittleEndian.PutUint64(out[n:], escWord[c])
			n += int(escLen[c])
			continue
		}
		// Non-ASCII: a run of characters written as they are (as many
		// bytes out as in), up to invalid UTF-8, U+2028 or U+2029.
		j := i
		r, size := rune(0), 0
		for j < len(b) && b[j] >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				break
			}
			j += size
			size = 0
		}
		n += copy(out[n:], b[i:j])
		i = j
		if size > 0 {
			// Invalid UTF-8 becomes U+FFFD. U+2028 and U+2029 are valid
			// JSON, but line terminators in JavaScript; encoding/json
			// escapes them unconditionally.
			out[n], out[n+1], out[n+2] = '\\', 'u', hexDigits[r>>12]
			out[n+3], out[n+4], out[n+5] = hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf]
			n += 6
			i += size
		}
	}
	out[n] = '"'
	return out[:n+1]
}

// growRoom returns b with room for at least n more bytes, as a slice up to
// its capacity.
func growRoom(b []byte, n int) []byte {
	b = slices.Grow(b, n)
	return b[:cap(b)]
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialBytes has the high bit set in the lowest byte of x that a JSON
// string does not take as it is (a control byte, '"', '\\', '<', '>', '&', or
// non-ASCII, which the rune decoder looks at), and 0 when there is none.
// Only the lowest set bit is exact: a subtraction borrows into the byte
// above only from a byte that is flagged itself.
func specialBytes(x uint64) uint64 {
	// A byte b < 0x80 becomes >= 0x80 in b-0x20 when it is under 0x20, and
	// in b^c - 1 when it equals c (0 - 1 borrows); a byte >= 0x80 is
	// flagged by its own high bit. '"' 0x22 and '&' 0x26 differ only in bit
	// 2, '<' 0x3c and '>' 0x3e only in bit 1: one test each pair.
	control := x - 0x20*lsb
	quoteAmp := (x &^ (0x04 * lsb)) ^ (0x22 * lsb) - lsb
	angle := (x &^ (0x02 * lsb)) ^ (0x3c * lsb) - lsb
	backslash := x ^ (0x5c * lsb) - lsb
	return (x | control | quoteAmp | angle | backslash) & msb
}

// appendRaw writes a json.RawMessage as json.Marshal does: compacted, with
// the same escapes. Canonical values, such as those json.Marshal produced,
// are copied as they are.
func appendRaw(dst []byte, raw json.RawMessage) []byte {
	if !needsRewrite(raw) && json.Valid(raw) {
		return append(dst, raw...)
	}
	if b, err := marshalRaw(raw); err == nil {
		return append(dst, b...)
	}
	// json.Marshal would fail on the whole event. Keep the text for whoever
	// reads it (say arguments a model got wrong) in a valid envelope.
	return appendString(dst, string(raw))
}

// canonicalRaw returns raw (valid JSON) in the form appendRaw writes.
func canonicalRaw(raw json.RawMessage) json.RawMessage {
	if !needsRewrite(raw) {
		return raw
	}
	if b, err := marshalRaw(raw); err == nil {
		return b
	}
	return raw
}

// marshalRaw is json.Marshal(raw), except that invalid UTF-8, which
// json.Marshal copies into its output as it is, becomes \ufffd, one for each
// bad byte, as encoding/json reads it: the wire is UTF-8, and a strict
// decoder (Python's json.loads) refuses anything else. In valid JSON such
// bytes can only be inside strings.
func marshalRaw(raw json.RawMessage) ([]byte, error) {
	if !utf8.Valid(raw) {
		raw = replaceInvalidUTF8(raw)
	}
	return json.Marshal(raw)
}

// replaceInvalidUTF8 returns b with each byte that is not part of a valid
// UTF-8 sequence written as the JSON escape \ufffd.
func replaceInvalidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, `\ufffd`...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// needsRewrite reports whether the valid JSON raw is not in the form
// appendRaw writes: whitespace between tokens, a byte json.Marshal escapes,
// or invalid UTF-8.
func needsRewrite(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			inString = !inString
		case '\\':
			if inString {
				i++ // the escaped byte cannot end the string
			}
		case ' ', '\t', '\n', '\r':
			if !inString {
				return true
			}
		case '<', '>', '&':
			return true
		default:
			if c < utf8.RuneSelf {
				continue
			}
			// Invalid UTF-8, and U+2028 and U+2029, which json.Marshal
			// escapes.
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return true
			}
			i += size - 1
		}
	}
	return false
}

// Decode parses and checks one event: valid JSON, a known version
// ([Version]; a higher one gives an error wrapping [ErrNewerVersion]), a
// non-empty type, a session, and for the call lifecycle types a call id and
// exactly the body the type calls for (start->Start, progress->Progress,
// delta->Delta or Chunk, suspend->Suspend, result->Result), with chunk
// indexes in range and no contradiction (content and content_omitted). Events of other types
// (session-level and future types) are accepted as long as the envelope is
// valid and carries none of the lifecycle bodies. Unknown fields are ignored
// for forward compatibility. Other errors wrap [ErrInvalidEvent].
//
// The event comes back in the form AppendJSON writes, so that encoding it
// again loses nothing: json.RawMessage fields compacted as json.Marshal
// writes them (invalid UTF-8 as \ufffd), empty Data and Meta as nil, a time
// at offset zero in UTC.
func Decode(data []byte) (*Event, error) {
	ev := new(Event)
	err := json.Unmarshal(data, ev)
	// Checked first: a newer version may change the fields themselves, and
	// encoding/json fills what it can before reporting a mismatch.
	if ev.Version > Version {
		return nil, fmt.Errorf("%w %d (this package reads version %d)", ErrNewerVersion, ev.Version, Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	if err := checkDecoded(ev); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidEvent, err)
	}
	normalizeDecoded(ev)
	if bytes.Contains(data, traceField) {
		ev.Trace = decodeTrace(data)
	}
	return ev, nil
}

var traceField = []byte(`"` + fieldTraceParent + `"`)

// decodeTrace reads the trace fields of an event's JSON (see Event.Trace):
// a TraceContext, or nil when it has no traceparent.
func decodeTrace(data []byte) Trace {
	var tr struct {
		Parent string `json:"traceparent"`
		State  string `json:"tracestate"`
	}
	if json.Unmarshal(data, &tr) != nil || tr.Parent == "" {
		return nil
	}
	return TraceContext{Parent: tr.Parent, State: tr.State}
}

// checkDecoded is Decode's validation of a decoded envelope.
func checkDecoded(ev *Event) error {
	if ev.Version < 1 {
		return fmt.Errorf(`version %d (missing "v"?)`, ev.Version)
	}
	if ev.Type == "" {
		return errors.New("empty type")
	}
	if ev.Session == "" {
		return errors.New("empty session")
	}
	bodies := [...]struct {
		typ Type
		set bool
	}{
		{TypeStart, ev.Start != nil},
		{TypeProgress, ev.Progress != nil},
		{TypeDelta, ev.Delta != nil || ev.Chunk != nil},
		{TypeSuspend, ev.Suspend != nil},
		{TypeResult, ev.Result != nil},
	}
	lifecycle := false
	for _, b := range bodies {
		if b.typ == ev.Type {
			lifecycle = true
		}
	}
	if lifecycle && ev.Call == "" {
		return fmt.Errorf("%q event without a call id", ev.Type)
	}
	if ev.Reset && ev.Type != TypeDelta {
		return fmt.Errorf("%q event with reset (only deltas reset)", ev.Type)
	}
	if c := ev.Chunk; c != nil {
		switch {
		case ev.Delta != nil:
			return errors.New(`delta event with both "delta" and "chunk"`)
		case c.Count < 1 || c.Index < 0 || c.Index >= c.Count:
			return fmt.Errorf("chunk %d of %d", c.Index, c.Count)
		case ev.Reset && c.Index != 0:
			return fmt.Errorf("reset on chunk %d (only the first chunk resets)", c.Index)
		}
	}
	if s := ev.Start; s != nil && s.ArgsOmitted && len(s.Args) > 0 {
		return errors.New("start with both args and args_omitted")
	}
	if r := ev.Result; r != nil {
		switch {
		case r.ContentOmitted && r.Content != nil:
			return errors.New("result with both content and content_omitted")
		case r.ContentSize < 0 || r.ContentParts < 0:
			return fmt.Errorf("result with content_size %d and content_parts %d", r.ContentSize, r.ContentParts)
		}
	}
	for _, b := range bodies {
		switch {
		case b.typ == ev.Type && !b.set:
			return fmt.Errorf("%q event without a %q body", ev.Type, b.typ)
		case b.typ != ev.Type && b.set:
			return fmt.Errorf("%q event with a %q body", ev.Type, b.typ)
		}
	}
	return nil
}

// normalizeDecoded brings a decoded event into the form AppendJSON writes.
func normalizeDecoded(ev *Event) {
	// "+00:00" decodes to time.Local or a fixed zone, but is written as "Z".
	if _, off := ev.Time.Zone(); off == 0 && ev.Time.Location() != time.UTC {
		ev.Time = ev.Time.UTC()
	}
	if s := ev.Start; s != nil && s.Args != nil {
		s.Args = canonicalRaw(s.Args)
	}
	if p := ev.Progress; p != nil && p.Data != nil {
		p.Data = canonicalRaw(p.Data)
	}
	if ev.Delta != nil {
		normalizePart(ev.Delta)
	}
	if ev.Data != nil {
		ev.Data = canonicalRaw(ev.Data)
	}
	if r := ev.Result; r != nil {
		for i := range r.Content {
			normalizePart(&r.Content[i])
		}
		if !r.ContentOmitted {
			// Written as an array; the size fields only describe omitted
			// content.
			if r.Content == nil {
				r.Content = []Part{}
			}
			r.ContentSize, r.ContentParts = 0, 0
		}
		if len(r.Meta) == 0 {
			r.Meta = nil
		}
	}
}

func normalizePart(p *Part) {
	if p.JSON != nil {
		p.JSON = canonicalRaw(p.JSON)
	}
	if len(p.Data) == 0 {
		p.Data = nil
	}
}
