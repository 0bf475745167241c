package toolkit

import (
	"sync"
	"sync/atomic"
)

// maxIdleWorkers bounds the goroutines kept waiting for work.
const maxIdleWorkers = 256

// pool runs the engine's work on reused goroutines. A fresh goroutine starts
// with a small stack and pays for growing it on its first deep call (JSON
// decoding, timers, the handler); reusing goroutines that already grew
// their stacks is most of what makes a small batch cheap. Work is never
// queued: without an idle worker, a new goroutine takes it.
type pool struct {
	tasks chan task // unbuffered: a send succeeds only into an idle worker
	quit  chan struct{}
	idle  atomic.Int32
	all   sync.WaitGroup
}

// task is one piece of work for the pool: the calls of a stage to take
// and execute (*stage), a batch to drive from its first stage (*Batch) or
// on from a driver stuck in a handler (takeOver), user code the driver
// waits for (*guard). Each is one pointer: a task costs no allocation.
type task interface{ do() }

func newPool() *pool {
	return &pool{tasks: make(chan task), quit: make(chan struct{})}
}

func (p *pool) submit(t task) {
	select {
	case p.tasks <- t:
	default:
		p.all.Add(1)
		go p.work(t)
	}
}

func (p *pool) work(t task) {
	defer p.all.Done()
	for {
		t.do()
		if p.idle.Add(1) > maxIdleWorkers {
			p.idle.Add(-1)
			return
		}
		select {
		case t = <-p.tasks:
			p.idle.Add(-1)
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

// close lets idle workers exit; busy ones exit when their task is done.
func (p *pool) close() { close(p.quit) }
