package toolkit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolstream/toolstream/events"
)

// A batch executes in stages. A stage is a stretch of the batch that may
// overlap: a maximal run of contiguous calls to concurrency-safe tools (with
// calls that fail before running, which touch nothing), or one other call
// alone. Stages run one after another.
//
// Inside a stage, runners take the calls in call order and execute them one
// after another: at most the toolkit's max parallel runners, so at most that
// many calls run at once. The goroutine that drives the batch (the caller of
// Session.Run, or a pool worker for Session.Start) is one of them; the others
// are pool workers. A one-call batch involves no other goroutine, and a
// runner that finishes a call goes on with the next one without a hand-off.
//
// A call that stops counting against the cap (it waits outside the process,
// or its handler was abandoned) makes way for a new runner. If the driver
// itself is stuck in a handler that outlived its deadline and grace period,
// the stage's watcher reports the call and hands driving to a pool worker
// (takeOver); the stuck goroutine stops driving when its handler returns.
type stage struct {
	batch   *Batch
	calls   []call
	start   time.Time
	next    atomic.Int32   // the next call a runner takes
	ended   bool           // st.mu (beside next, where the padding was)
	pending sync.WaitGroup // calls of the stage without a final result

	mu       sync.Mutex // scopes grow when a suspended call resumes
	scopes   []*scope
	scopeBuf [2]*scope
	first    scope // storage for the stage's first scope
}

// drive runs the stages in order on the calling goroutine.
func (b *Batch) drive() {
	if b.hooks != nil && !b.hooked {
		b.hooked = true // once: a take-over drives on without them
		if !b.before() {
			return // abandoned in a Before hook: a pool worker drives on
		}
	}
	for b.next < len(b.calls) {
		st := b.beginStage()
		if !st.runCalls(true) {
			return // abandoned in a handler: a pool worker drives on (takeOver)
		}
		b.endStage(st)
	}
	b.end()
}

// do drives the batch from its first stage on a pool worker (Session.Start).
func (b *Batch) do() { b.drive() }

// takeOver is the task of driving on a batch whose driver is stuck.
type takeOver struct{ b *Batch }

func (t takeOver) do() { t.b.takeOver() }

// takeOver drives a batch whose driver is stuck in a handler that outlived its
// deadline and grace period: it runs the stage's calls still waiting, waits
// for the rest of the stage, then goes on with the next.
func (b *Batch) takeOver() {
	st := b.current.Load()
	if !st.runCalls(true) {
		return
	}
	b.endStage(st)
	b.drive()
}

// beginStage cuts the next stage off the batch, gives each call its scope
// and starts the stage's other runners.
func (b *Batch) beginStage() *stage {
	n := len(b.calls)
	i, j := b.next, b.next+1
	if b.calls[i].parallel() {
		for j < n && b.calls[j].parallel() {
			j++
		}
	}
	b.next = j
	st := &b.first
	if i > 0 {
		st = new(stage)
	}
	st.batch, st.calls, st.start = b, b.calls[i:j], time.Now()
	st.scopes = st.scopeBuf[:0]
	st.pending.Add(len(st.calls))
	for k := range st.calls {
		c := &st.calls[k]
		c.stage = st
		if c.tool == nil && c.preErr == nil {
			if r := b.tk.opts.resolver; r != nil && b.err() == nil {
				c.resolve(r, st.start) // alone in its stage: see call.parallel
			}
		}
		c.setTimeout()
		s := st.scopeFor(c.timeout)
		c.scope, c.cur = s, s
	}
	st.arm() // once every call has its scope: the watcher reads them
	// Published only now, complete: Cancel and Close read it. A cancellation
	// that comes before is seen by the runners before each call.
	b.current.Store(st)
	if !b.counted {
		return st // the toolkit is closed: the driver alone reports the calls interrupted
	}
	for range min(len(st.calls), b.tk.opts.maxParallel) - 1 {
		b.tk.pool.submit(st)
	}
	return st
}

// do takes calls of the stage and executes them on a pool worker.
func (st *stage) do() { st.runCalls(false) }

// runCalls takes the stage's calls in order and executes them until none is
// left to take. driver says whether the goroutine drives the batch. It
// reports false only when a call it executed was abandoned: the goroutine
// came back late and must leave the batch alone.
func (st *stage) runCalls(driver bool) bool {
	for first := driver; ; first = false {
		hookRunnerQueued(st)
		k := int(st.next.Add(1)) - 1
		if k >= len(st.calls) {
			return true
		}
		c := &st.calls[k]
		if !c.claimed.CompareAndSwap(false, true) {
			continue // already finished in the queue: deadline, cancellation
		}
		if err := st.batch.err(); err != nil {
			c.finish(events.StateInterrupted, nil, st.batch.notStarted(c))
			continue
		}
		c.inline = driver
		if first && k == 0 {
			c.started = st.start // the stage began a moment ago: no need to ask the clock again
		}
		c.counts.Store(true)
		hookRunnerClaimed(c)
		if !c.exec() {
			return false
		}
	}
}

// makeWay is called when c stops counting against the parallelism cap (it
// waits outside the process, or was abandoned): another runner takes the
// calls still waiting, if any.
func (c *call) makeWay() {
	if !c.counts.CompareAndSwap(true, false) {
		return
	}
	if st := c.stage; int(st.next.Load()) < len(st.calls) {
		st.batch.tk.pool.submit(st)
	}
}

// finishWaiting reports the calls no runner has taken interrupted: the
// batch was cancelled before they started.
func (st *stage) finishWaiting() {
	for k := int(st.next.Load()); k < len(st.calls); k++ {
		if c := &st.calls[k]; c.claimed.CompareAndSwap(false, true) {
			c.finish(events.StateInterrupted, nil, st.batch.notStarted(c))
		}
	}
}

// endStage waits until every call of the stage has its result.
func (b *Batch) endStage(st *stage) {
	st.pending.Wait()
	st.disarm()
	b.current.Store(nil)
}
