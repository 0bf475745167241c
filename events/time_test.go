package events

import (
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, on a machine without a zone database too
)

// marshalTime is what appendTime must write: t.MarshalJSON, or null where
// it fails.
func marshalTime(t time.Time) string {
	b, err := t.MarshalJSON()
	if err != nil {
		return "null"
	}
	return string(b)
}

// checkTimes compares appendTime with MarshalJSON on each time, twice in a
// row (the second from the formatted second kept by the first).
func checkTimes(t *testing.T, times []time.Time) {
	t.Helper()
	for _, tm := range times {
		for range 2 {
			if got, want := string(appendTime([]byte("x"), tm)), "x"+marshalTime(tm); got != want {
				t.Fatalf("appendTime(%v) = %s, want %s", tm, got, want)
			}
		}
	}
}

// someTimes are times in loc around what appendTime must get right: every
// nanosecond digit count, trailing zeros, second boundaries, years at and
// past the four-digit limit.
func someTimes(loc *time.Location) []time.Time {
	var out []time.Time
	for _, ns := range []int{0, 1, 10, 100, 999, 1000, 120000, 1e8, 5e8, 123456789, 999999999} {
		out = append(out, time.Date(2026, 12, 1, 21, 7, 33, ns, loc), time.Date(2026, 12, 1, 21, 7, 34, ns, loc))
	}
	for _, y := range []int{-1, 0, 1, 1969, 1970, 9999, 10000} {
		out = append(out, time.Date(y, 12, 31, 23, 59, 59, 5e8, loc), time.Date(y, 1, 1, 0, 0, 0, 0, loc))
	}
	out = append(out, time.Now().In(loc), time.Unix(-1, 1).In(loc), time.Unix(0, 0).In(loc))
	return out
}

// TestAppendTime: the formatted second kept between calls never shows
// through: in UTC, the local zone and other zones (which are formatted
// whole), alternating, and from goroutines at once.
func TestAppendTime(t *testing.T) {
	var all []time.Time
	for _, loc := range []*time.Location{time.UTC, time.Local, time.FixedZone("IST", 5*3600+1800), time.FixedZone("bad", 24*3600)} {
		checkTimes(t, someTimes(loc))
		all = append(all, someTimes(loc)...)
	}
	// The same instants, one location after the other.
	now := time.Now()
	checkTimes(t, []time.Time{now.UTC(), now.Local(), now.UTC(), now.In(time.FixedZone("x", -3600)), now.Local()})

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				tm := all[(g*31+i)%len(all)]
				if got, want := string(appendTime(nil, tm)), marshalTime(tm); got != want {
					t.Errorf("goroutine %d: appendTime(%v) = %s, want %s", g, tm, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestAppendTimeLocalZones runs appendTimeInZone in processes whose local
// zone changes its offset (daylight saving time, a 30-minute shift): a
// second is formatted with the offset in force at that second.
func TestAppendTimeLocalZones(t *testing.T) {
	if os.Getenv("TOOLSTREAM_TZ_CHILD") != "" {
		t.Skip("in the child")
	}
	for _, zone := range []string{"America/New_York", "Australia/Lord_Howe", "Europe/Dublin"} {
		if _, err := time.LoadLocation(zone); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendTimeInZone$", "-test.v")
		cmd.Env = append(os.Environ(), "TZ="+zone, "TOOLSTREAM_TZ_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("TZ=%s: %v\n%s", zone, err, out)
		}
	}
}

// TestAppendTimeInZone is TestAppendTimeLocalZones' child: every second
// of the hours around each offset change of the local zone in 2026, in the
// local zone and in UTC in turn.
func TestAppendTimeInZone(t *testing.T) {
	if os.Getenv("TOOLSTREAM_TZ_CHILD") == "" {
		t.Skip("run by TestAppendTimeLocalZones")
	}
	var times []time.Time
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := range 365 * 24 {
		a, b := start.Add(time.Duration(d)*time.Hour).Local(), start.Add(time.Duration(d+1)*time.Hour).Local()
		_, oa := a.Zone()
		_, ob := b.Zone()
		if oa == ob {
			continue
		}
		for s := -90; s <= 3600+90; s++ {
			tm := a.Add(time.Duration(s)*time.Second + time.Duration(s&7)*time.Millisecond)
			times = append(times, tm, tm.UTC()) // the same second in both, one after the other
		}
	}
	if len(times) == 0 {
		t.Fatalf("TZ=%s: no offset change in 2026", os.Getenv("TZ"))
	}
	checkTimes(t, times)
	t.Logf("TZ=%s: %d times around the offset changes", os.Getenv("TZ"), len(times))
}

// FuzzAppendTime: appendTime writes what MarshalJSON writes, in UTC and in
// the local zone, for any instant.
func FuzzAppendTime(f *testing.F) {
	f.Add(int64(1796159253), int64(123456789), false)
	f.Add(int64(-62135596800), int64(0), true)
	f.Add(int64(253402300799), int64(999999999), false)
	f.Fuzz(func(t *testing.T, sec, nsec int64, local bool) {
		tm := time.Unix(sec, nsec).UTC()
		if local {
			tm = tm.Local()
		}
		checkTimes(t, []time.Time{tm})
	})
}
