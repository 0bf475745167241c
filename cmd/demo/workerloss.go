package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// workerLoss shows on the terminal what the events alone do not: a call
// whose worker was lost (it died or stopped answering: remote.LostError)
// and the retry that ran it on another worker. Installed after Retry, it
// sees each attempt.
type workerLoss struct {
	view *termView
	mu   sync.Mutex
	pids map[string]int // worker id -> its process, for the workers the demo started
	lost map[string]string
}

func newWorkerLoss(view *termView) *workerLoss {
	return &workerLoss{view: view, pids: map[string]int{}, lost: map[string]string{}}
}

// started records a worker process the demo started.
func (w *workerLoss) started(id string, pid int) {
	w.mu.Lock()
	w.pids[id] = pid
	w.mu.Unlock()
}

// name is a worker's id with its process, when the demo started it.
func (w *workerLoss) name(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id == "" {
		return "no worker"
	}
	if pid, ok := w.pids[id]; ok {
		return fmt.Sprintf("worker %s (pid %d)", id, pid)
	}
	return "worker " + id
}

func (w *workerLoss) interceptor(tools []string) toolkit.Interceptor {
	return toolkit.Interceptor{Name: "demo-worker-loss", Tools: tools, Intercept: w.intercept}
}

func (w *workerLoss) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	out := next(ctx, inv)
	key := inv.Session + "\x00" + inv.Call.ID
	var lost *remote.LostError
	if errors.As(out.Err, &lost) {
		who := w.name(lost.Worker)
		w.mu.Lock()
		w.lost[key] = who
		w.mu.Unlock()
		w.view.printf("  %-11s %-8s %s stopped answering %s (no heartbeat for %v); the call is retried (attempt %d next)\n",
			"worker lost", inv.Call.ID, who, inv.Call.Name, lost.After.Round(10*time.Millisecond), inv.Attempts()+1)
		return out
	}
	w.mu.Lock()
	was, retried := w.lost[key]
	delete(w.lost, key)
	w.mu.Unlock()
	if retried && !out.State.IsError() {
		ran := "another worker"
		if id, ok := inv.MetaValue(remote.MetaWorker); ok {
			ran = w.name(fmt.Sprint(id))
		}
		w.view.printf("  %-11s %-8s %s ran on %s, attempt %d (after %s was lost)\n", "retried", inv.Call.ID, inv.Call.Name, ran, inv.Attempts(), was)
	}
	return out
}
