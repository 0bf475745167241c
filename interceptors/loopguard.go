package interceptors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// ErrLoop is the cause (for errors.Is) of a call refused by [LoopGuard].
var ErrLoop = errors.New("repeated tool call")

type loopConfig struct {
	n      int
	window time.Duration
	now    func() time.Time
	state  *toolkit.Local[*loopState] // per session
	seen   *toolkit.Local[bool]       // per call: let through once, so a retry is not a repeat
}

// LoopGuardRemembered is how many distinct calls (tool and arguments)
// [LoopGuard] remembers per session. When a new one comes and the session
// is full, the one called least recently is forgotten.
const LoopGuardRemembered = 1024

// LoopGuard returns an interceptor (named "loopguard") that stops a model
// repeating itself: the n-th call of the same tool with the same arguments
// within window in a session, and every further one, does not run. It gets
// state error and a message telling the model it repeats itself and should
// change its approach; its cause matches [ErrLoop].
//
// Arguments are the same when they are equal as JSON: key order, spacing,
// string escapes (\u0041 is A) and the spelling of numbers (1.5, 1.50 and
// 15e-1 are one number; numbers are compared as exact decimals) do not
// matter. Refused calls count too, so a model that keeps
// repeating stays refused until it pauses for a window. n below 2 means 2;
// window <= 0 means the whole session. Another attempt of the same call
// (a retry) is not a repetition.
//
// The arguments themselves are not kept: a call is remembered as a 128-bit
// hash of its tool and canonical arguments, with the time of its last n
// calls. A session's state is at most [LoopGuardRemembered] such entries
// (about 100 bytes plus 8 bytes per n each, whatever the size of the
// arguments) and goes with the session when it is closed.
func LoopGuard(n int, window time.Duration) toolkit.Interceptor {
	return loopGuard(n, window, time.Now)
}

// loopGuard is LoopGuard measuring its window with the clock now.
func loopGuard(n int, window time.Duration, now func() time.Time) toolkit.Interceptor {
	cfg := &loopConfig{n: max(n, 2), window: window, now: now,
		state: toolkit.NewSessionLocal[*loopState](), seen: toolkit.NewCallLocal[bool]()}
	return toolkit.Interceptor{Name: "loopguard", Intercept: cfg.intercept}
}

// loopKey identifies a call by the first 128 bits of the SHA-256 of its
// tool name and canonical arguments. Two different calls share a key with
// probability about 2^-128 per pair: for the 1024 calls a session
// remembers, about 10^-33, far below any hardware error rate.
type loopKey [16]byte

// loopState is one session's recent calls.
type loopState struct {
	mu    sync.Mutex
	calls map[loopKey]*loopEntry
}

// loopEntry is one remembered call: the times of its latest calls (at most
// n, oldest first, in Unix nanoseconds) and how many times it was called
// since it was last quiet for a whole window.
type loopEntry struct {
	times []int64
	count int
	last  int64
}

func (cfg *loopConfig) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
	if seen, _ := cfg.seen.Get(inv); seen {
		return next(ctx, inv)
	}
	st := cfg.state.LoadOrInit(inv, func() *loopState {
		return &loopState{calls: map[loopKey]*loopEntry{}}
	})
	key := loopHash(toolName(inv), inv.Call.Args)
	now := cfg.now().UnixNano()

	st.mu.Lock()
	inWindow, count := st.record(key, now, cfg.n, cfg.window)
	st.mu.Unlock()

	if inWindow >= cfg.n {
		return toolkit.Failure(events.StateError, &loopError{tool: inv.Call.Name, count: count, window: cfg.window})
	}
	cfg.seen.Set(inv, true)
	return next(ctx, inv)
}

// record notes a call of key at now and returns how many of its latest n
// calls fall within the window (all of them without a window) and how many
// times it was called since it was last quiet for a window. st.mu must be
// held.
func (st *loopState) record(key loopKey, now int64, n int, window time.Duration) (inWindow, count int) {
	st.prune(now, window)
	e := st.calls[key]
	if e == nil {
		if len(st.calls) >= LoopGuardRemembered {
			st.forgetOldest()
		}
		e = &loopEntry{times: make([]int64, 0, min(n, 4))}
		st.calls[key] = e
	}
	if len(e.times) == n {
		e.times = append(e.times[:0], e.times[1:]...)
	}
	e.times = append(e.times, now)
	e.count++
	e.last = now
	return len(e.times), e.count
}

// prune drops the calls older than the window, and the entries left with
// none, so that the state stays as small as the window is short.
func (st *loopState) prune(now int64, window time.Duration) {
	if window <= 0 {
		return
	}
	cutoff := now - int64(window)
	for k, e := range st.calls {
		i := 0
		for i < len(e.times) && e.times[i] <= cutoff {
			i++
		}
		switch {
		case i == len(e.times):
			delete(st.calls, k) // quiet for a window: its count starts over
		case i > 0:
			e.times = append(e.times[:0], e.times[i:]...)
		}
	}
}

// forgetOldest drops the entry called least recently.
func (st *loopState) forgetOldest() {
	var (
		oldest loopKey
		at     int64
		found  bool
	)
	for k, e := range st.calls {
		if !found || e.last < at {
			oldest, at, found = k, e.last, true
		}
	}
	delete(st.calls, oldest)
}

// loopHash hashes the tool name and the arguments as compact JSON with
// sorted keys, strings with their escapes decoded and numbers in one
// spelling per value (see sameNumbers); as they are when they are not
// JSON; no arguments is the empty object. The canonical form is written
// into the hash, not kept.
func loopHash(tool string, args json.RawMessage) loopKey {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	loopCanonical(h, args)
	var k loopKey
	copy(k[:], h.Sum(nil))
	return k
}

func loopCanonical(w io.Writer, args json.RawMessage) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		io.WriteString(w, "{}")
		return
	}
	v, err := decodeJSON(trimmed)
	if err != nil {
		w.Write(args)
		return
	}
	b, err := json.Marshal(sameNumbers(v))
	if err != nil {
		w.Write(args)
		return
	}
	w.Write(b)
}

type loopError struct {
	tool   string
	count  int
	window time.Duration
}

func (e *loopError) Error() string {
	within := "in this conversation"
	if e.window > 0 {
		within = fmt.Sprintf("without a pause of %v", e.window)
	}
	return fmt.Sprintf("repeated call: you have called %q with the same arguments %d times %s; it was not run again. "+
		"Repeating it will not give a different result: change your approach (other arguments or another tool) or answer with what you have",
		e.tool, e.count, within)
}

func (e *loopError) Is(target error) bool { return target == ErrLoop }

// sameNumbers rewrites, in place, the numbers of a value decodeJSON made
// into one spelling per decimal value (canonicalNumber), so that 1.5, 1.50
// and 15e-1 are one number. The engine rewrites integral numbers (2.0,
// 1e2) before interceptors run, but no other number.
func sameNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return json.Number(canonicalNumber(string(x)))
	case map[string]any:
		for k, e := range x {
			x[k] = sameNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = sameNumbers(e)
		}
	}
	return v
}

// canonicalNumber writes a JSON number as its exact decimal value: "0"
// for zero (-0 too), else an optional minus, the significant digits
// without leading or trailing zeros, "e" and the power of ten they are
// multiplied by (15e-1 for 1.5, 1.50 and 0.15e1). Two numbers get the same
// text exactly when they are equal as decimals: 1.5000000000000001 is not
// 1.5, though a float64 cannot tell them apart. s must be a valid JSON
// number (as json.Number from a decoder is).
func canonicalNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	ip, fp, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(ip+fp, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	shift := int64(len(digits)-len(trimmed)) - int64(len(fp))
	var power string
	if e, err := strconv.ParseInt(exp, 10, 64); err == nil || exp == "" {
		if p := e + shift; (shift >= 0) == (p >= e) { // no overflow
			power = strconv.FormatInt(p, 10)
		}
	}
	if power == "" { // an exponent beyond int64: exact all the same
		power = decimalAdd(exp, shift)
	}
	if neg {
		return "-" + trimmed + "e" + power
	}
	return trimmed + "e" + power
}

// decimalAdd returns the decimal text of e+shift, where e is the text of an
// integer (an optional sign, digits) whose magnitude is larger than
// shift's. It takes time linear in the length of e: a model's arguments
// may hold an exponent of millions of digits, which big.Int would parse
// in time growing with the square of its length.
func decimalAdd(e string, shift int64) string {
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimLeft(strings.TrimLeft(e, "+-"), "0")
	mag := uint64(shift)
	if shift < 0 {
		mag = uint64(-(shift + 1)) + 1 // no overflow at math.MinInt64
	}
	b := []byte(e)
	if (shift < 0) == neg || shift == 0 {
		// |e| + |shift|
		for i := len(b) - 1; mag > 0 && i >= 0; i-- {
			v := uint64(b[i]-'0') + mag%10
			mag /= 10
			if v >= 10 {
				v -= 10
				mag++
			}
			b[i] = byte('0' + v)
		}
		if mag > 0 {
			b = append([]byte(strconv.FormatUint(mag, 10)), b...)
		}
	} else {
		// |e| - |shift|, |e| being the larger
		for i := len(b) - 1; mag > 0 && i >= 0; i-- {
			v := int(b[i]-'0') - int(mag%10)
			mag /= 10
			if v < 0 {
				v += 10
				mag++
			}
			b[i] = byte('0' + v)
		}
		b = bytes.TrimLeft(b, "0")
	}
	if len(b) == 0 {
		return "0"
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
