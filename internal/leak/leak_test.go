package leak

import (
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

// fakeT records what Check reports.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Errorf(format string, a ...any) { f.failed = format }

func TestCheckFindsALeak(t *testing.T) {
	old := Grace
	Grace = 50 * time.Millisecond
	defer func() { Grace = old }()

	stop := make(chan struct{})
	ft := &fakeT{}
	check := Check(ft)
	go func() { <-stop }() // leaked until the test ends
	check()
	close(stop)
	if !strings.Contains(ft.failed, "leaked") {
		t.Fatal("a goroutine left running was not reported")
	}
}

func TestCheckWaitsForGoroutinesThatEnd(t *testing.T) {
	ft := &fakeT{}
	check := Check(ft)
	go func() { time.Sleep(20 * time.Millisecond) }() // ends within the grace period
	check()
	if ft.failed != "" {
		t.Fatal("a goroutine that ended within the grace period was reported")
	}
}

func TestCheckIgnoresGoroutinesFromBefore(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }()
	time.Sleep(time.Millisecond)
	ft := &fakeT{}
	Check(ft)()
	if ft.failed != "" {
		t.Fatal("a goroutine started before Check was reported")
	}
}
