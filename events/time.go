package events

import (
	"sync/atomic"
	"time"
)

// appendTime writes t as time.Time.MarshalJSON does, or null where
// MarshalJSON fails. An event's time is nearly always the current second
// in the local zone (or UTC): that second is formatted once, and each
// event adds only its nanoseconds, since formatting the whole time took
// half of encoding a small event.
func appendTime(dst []byte, t time.Time) []byte {
	loc := t.Location()
	if loc != time.Local && loc != time.UTC {
		return appendTimeFormat(dst, t)
	}
	sec := t.Unix()
	s := lastSecond.Load()
	if s == nil || s.sec != sec || s.loc != loc {
		s = formatSecond(sec, loc)
		lastSecond.Store(s)
	}
	if s.head == "" {
		return append(dst, "null"...)
	}
	dst = append(dst, s.head...)
	if ns := t.Nanosecond(); ns != 0 {
		dst = appendNanos(dst, ns)
	}
	return append(dst, s.zone...)
}

// second is one second of one location as appendTime writes it: head is
// `"2006-01-02T15:04:05` (empty where MarshalJSON fails), zone `Z"` or
// `-07:00"`.
type second struct {
	sec        int64
	loc        *time.Location
	head, zone string
}

// lastSecond is the second appendTime formatted last, shared by every
// encoder: they all write the current one.
var lastSecond atomic.Pointer[second]

func formatSecond(sec int64, loc *time.Location) *second {
	s := &second{sec: sec, loc: loc}
	b := appendTimeFormat(nil, time.Unix(sec, 0).In(loc))
	const headLen = len(`"2006-01-02T15:04:05`)
	if b[0] == '"' {
		s.head, s.zone = string(b[:headLen]), string(b[headLen:])
	}
	return s
}

// appendNanos writes ns (1 to 999,999,999) as RFC 3339 with nanoseconds
// does: a point and up to nine digits, without trailing zeros.
func appendNanos(dst []byte, ns int) []byte {
	var d [10]byte
	d[0] = '.'
	for i := 9; i > 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 10
	for d[n-1] == '0' {
		n--
	}
	return append(dst, d[:n]...)
}

// appendTimeFormat writes t as time.Time.MarshalJSON does, or null where
// MarshalJSON fails: it formats t once and makes MarshalJSON's checks on
// the bytes, as MarshalJSON does (asking t for its year and zone first
// would work the date out twice more).
func appendTimeFormat(dst []byte, t time.Time) []byte {
	n0 := len(dst)
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	b := dst[n0+1:]
	ok := len(b) > 4 && b[4] == '-' // a year of exactly 4 digits
	if ok && b[len(b)-1] != 'Z' {
		// A zone "+hh:mm" with hh under 24.
		z := b[len(b)-len("Z07:00"):]
		ok = (z[0] == '+' || z[0] == '-') && 10*(z[1]-'0')+(z[2]-'0') < 24
	}
	if !ok {
		return append(dst[:n0], "null"...)
	}
	return append(dst, '"')
}
