package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// TestWorkerLossShown: two workers serve a tool over a real NATS server;
// the one that takes the call goes silent (its connection closed, as a
// killed process's), and the terminal says which worker was lost and that
// the call was retried, then which worker ran the retry, and on which
// attempt. Before, a lost worker showed nowhere in the terminal: only the
// result's meta said attempts: 2.
func TestWorkerLossShown(t *testing.T) {
	bus := natstest.Bus(t, natsbus.WithListen("127.0.0.1:0"))
	type served struct {
		w  *remote.Worker
		nc *nats.Conn
	}
	var mu sync.Mutex
	var first string // the worker the call went to first
	taken := make(chan string, 1)
	var workers []served
	for range 2 {
		nc, err := nats.Connect(bus.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		wtk := toolkit.New()
		t.Cleanup(func() { closeWithin(5*time.Second, wtk.Close) })
		var self *remote.Worker
		if err := wtk.Add(toolkit.MustTool(toolkit.Spec{Name: "count_lines", ReadOnly: true, ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			mu.Lock()
			me := self.ID()
			isFirst := first == ""
			if isFirst {
				first = me
			}
			mu.Unlock()
			if isFirst {
				taken <- me
				// Its first word binds the call to this worker.
				stream.From(ctx).Progress("counting", 0.1)
				<-ctx.Done() // until this worker is gone
				return "", ctx.Err()
			}
			return "counted by " + me, nil
		})); err != nil {
			t.Fatal(err)
		}
		w, err := remote.Serve(nc, wtk)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		self = w
		mu.Unlock()
		t.Cleanup(func() { closeWithin(time.Second, w.Stop) })
		workers = append(workers, served{w, nc})
	}

	var out syncBuffer
	view := newTermView(&out, false)
	defer view.stop()
	loss := newWorkerLoss(view)
	for i, s := range workers {
		loss.started(s.w.ID(), 4100+i)
	}
	progressed := make(chan struct{}, 1)
	tk := toolkit.New(toolkit.WithObserver(view), toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == events.TypeProgress {
			select {
			case progressed <- struct{}{}:
			default:
			}
		}
	})))
	defer closeWithin(5*time.Second, tk.Close)
	c := remote.NewClient(bus.Conn(), remote.WithHeartbeat(20*time.Millisecond, 5))
	defer c.Close()
	rt, err := c.Tool(context.Background(), "count_lines")
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(rt); err != nil {
		t.Fatal(err)
	}
	if err := tk.Use(interceptors.Retry(interceptors.RetryBackoff(time.Millisecond, 10*time.Millisecond)), loss.interceptor(workerTools)); err != nil {
		t.Fatal(err)
	}
	sess, _ := tk.Session("w")
	b := sess.Start(context.Background(), []toolkit.Call{{ID: "call_1", Name: "count_lines", Args: []byte(`{}`)}})
	lostID := <-taken
	<-progressed // the worker spoke: the call is bound to it
	for _, s := range workers {
		if s.w.ID() == lostID {
			s.nc.Close() // the worker goes silent, as a killed process does
		}
	}
	r := b.Wait()[0]
	if r.State != events.StateSuccess {
		t.Fatalf("the retried call: %s %q", r.State, r.Text())
	}
	other := workers[0].w.ID()
	pid := "4100"
	if other == lostID {
		other, pid = workers[1].w.ID(), "4101"
	}
	lostPid := map[string]string{"4100": "4101", "4101": "4100"}[pid]
	s := out.String()
	for _, want := range []string{
		"  worker lost call_1   worker " + lostID + " (pid " + lostPid + ") stopped answering count_lines (no heartbeat for",
		"; the call is retried (attempt 2 next)",
		"  retried     call_1   count_lines ran on worker " + other + " (pid " + pid + "), attempt 2 (after worker " + lostID + " (pid " + lostPid + ") was lost)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, s)
		}
	}
}
