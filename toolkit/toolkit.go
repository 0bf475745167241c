package toolkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// Toolkit holds tools and runs a model's tool calls. One toolkit serves many
// sessions concurrently; all its methods are safe for concurrent use.
type Toolkit struct {
	opts options
	log  zerolog.Logger

	regMu sync.Mutex               // serialises registry writers
	reg   atomic.Pointer[registry] // readers never lock

	obsMu     sync.Mutex
	observers atomic.Pointer[observerSet]
	vis       atomic.Pointer[Visibility]
	visMu     sync.Mutex
	icMu      sync.Mutex
	ics       atomic.Pointer[interceptors]
	icGen     atomic.Uint64              // bumped when an interceptor is switched on or off
	hooks     atomic.Pointer[batchHooks] // nil without batch hooks (batchhook.go)

	sessMu   sync.Mutex
	sessions map[string]*Session

	batchMu   sync.Mutex
	active    *Batch        // batches in progress (a list through Batch.nextActive), interrupted by Close
	closeDone chan struct{} // closed when Close has finished
	batches   sync.WaitGroup
	pool      *pool
	clock     *clock
	batchSeq  atomic.Uint64
	nonce     string // random: makes run ids unique across toolkits
	closed    atomic.Bool
	stats     counters

	family derived // Derive: the parent, the toolkits derived from this one
}

// registry is an immutable snapshot of the registered tools.
type registry struct {
	byName map[string]*Tool
	order  []*Tool // registration order: stable prompts
}

// New returns an empty toolkit.
func New(opts ...Option) *Toolkit {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return newToolkit(o)
}

func newToolkit(o options) *Toolkit {
	tk := &Toolkit{opts: o, log: o.logger, sessions: make(map[string]*Session), pool: newPool(), nonce: randomHex(4)}
	tk.clock = newClock(o.cancelGrace)
	tk.reg.Store(&registry{byName: map[string]*Tool{}})
	tk.observers.Store(&observerSet{})
	tk.ics.Store(&interceptors{})
	for _, reg := range o.observers {
		tk.attach(reg.obs, reg.inline)
	}
	return tk
}

// Add registers tools. A name that is already registered is an error
// (ErrDuplicate); nothing is registered if any tool fails.
func (tk *Toolkit) Add(tools ...*Tool) error { return tk.register(tools, false) }

// Replace registers tools, each replacing the tool of the same name if
// there is one (it keeps its place in the order) or added after the others.
// Nothing is registered if any tool fails.
func (tk *Toolkit) Replace(tools ...*Tool) error { return tk.register(tools, true) }

func (tk *Toolkit) register(tools []*Tool, replace bool) error {
	tk.regMu.Lock()
	defer tk.regMu.Unlock()
	old := tk.reg.Load()
	next := &registry{byName: make(map[string]*Tool, len(old.byName)+len(tools)), order: slices.Clone(old.order)}
	for k, v := range old.byName {
		next.byName[k] = v
	}
	for _, t := range tools {
		if t == nil {
			return errors.New("toolkit: nil tool")
		}
		name := t.spec.Name
		if prev, ok := next.byName[name]; ok {
			if !replace {
				return fmt.Errorf("%w: %q (Toolkit.Replace replaces it)", ErrDuplicate, name)
			}
			next.order[slices.Index(next.order, prev)] = t
		} else {
			next.order = append(next.order, t)
		}
		next.byName[name] = t
	}
	tk.reg.Store(next)
	return nil
}

// Remove unregisters tools by name and reports how many were removed. Calls
// already running finish normally.
func (tk *Toolkit) Remove(names ...string) int {
	tk.regMu.Lock()
	defer tk.regMu.Unlock()
	old := tk.reg.Load()
	next := &registry{byName: make(map[string]*Tool, len(old.byName)), order: make([]*Tool, 0, len(old.order))}
	n := 0
	for _, t := range old.order {
		if slices.Contains(names, t.spec.Name) {
			n++
			continue
		}
		next.order = append(next.order, t)
		next.byName[t.spec.Name] = t
	}
	tk.reg.Store(next)
	return n
}

// Tool returns the tool registered under name.
func (tk *Toolkit) Tool(name string) (*Tool, bool) {
	t, ok := tk.reg.Load().byName[name]
	return t, ok
}

// Tools returns the registered tools in registration order.
func (tk *Toolkit) Tools() []*Tool {
	return slices.Clone(tk.reg.Load().order)
}

// Definitions returns the definitions of all registered tools, ready for an
// LLM request. Use [Session.Definitions] for what one session may see (the
// two differ once a Visibility is installed).
func (tk *Toolkit) Definitions() []Definition {
	return definitions(tk.reg.Load().order)
}

func definitions(tools []*Tool) []Definition {
	defs := make([]Definition, len(tools))
	for i, t := range tools {
		defs[i] = t.Definition()
	}
	return defs
}

// track registers a starting batch; it reports false once the toolkit is
// closed.
func (tk *Toolkit) track(b *Batch) bool {
	tk.batchMu.Lock()
	defer tk.batchMu.Unlock()
	if tk.closed.Load() {
		return false
	}
	b.prevActive, b.nextActive = nil, tk.active
	if tk.active != nil {
		tk.active.prevActive = b
	}
	tk.active = b
	tk.batches.Add(1)
	return true
}

func (tk *Toolkit) untrack(b *Batch) {
	tk.batchMu.Lock()
	if b.prevActive != nil {
		b.prevActive.nextActive = b.nextActive
	} else {
		tk.active = b.nextActive
	}
	if b.nextActive != nil {
		b.nextActive.prevActive = b.prevActive
	}
	b.prevActive, b.nextActive = nil, nil
	tk.batchMu.Unlock()
	tk.batches.Done()
}

// Close interrupts every batch, waits for them to report their results and for
// observers to take their events, and releases the toolkit's goroutines,
// including handlers that were abandoned after their deadline and are still
// running. It returns ctx.Err() if ctx ends first; calling Close again waits
// again; a nil ctx waits without a bound. Batches started after Close
// report every call as interrupted.
//
// Closing a toolkit closes the toolkits derived from it ([Toolkit.Derive])
// first, and never the toolkit it was derived from.
func (tk *Toolkit) Close(ctx context.Context) error {
	done := tk.startClose()
	if ctx == nil {
		<-done // no bound given
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startClose interrupts the batches of the toolkit and of the toolkits
// derived from it, and returns a channel closed when the shutdown is over.
func (tk *Toolkit) startClose() <-chan struct{} {
	tk.batchMu.Lock()
	first := tk.closed.CompareAndSwap(false, true)
	if first {
		tk.closeDone = make(chan struct{})
	}
	done := tk.closeDone
	var active []*Batch
	for b := tk.active; b != nil; b = b.nextActive {
		active = append(active, b)
	}
	tk.batchMu.Unlock()
	if first {
		var kids []<-chan struct{}
		for _, kid := range tk.takeKids() {
			kids = append(kids, kid.startClose())
		}
		for _, r := range active {
			r.interrupt(ErrClosed)
		}
		go tk.shutdown(done, kids)
	}
	return done
}

func (tk *Toolkit) shutdown(done chan struct{}, kids []<-chan struct{}) {
	for _, k := range kids {
		<-k // their events go through this toolkit's observers
	}
	if p := tk.family.parent; p != nil {
		p.forget(tk)
	}
	tk.batches.Wait()
	tk.obsMu.Lock()
	boxes := tk.observers.Load().boxes
	tk.observers.Store(&observerSet{})
	tk.obsMu.Unlock()
	for _, mb := range boxes {
		mb.close()
	}
	for _, mb := range boxes {
		<-mb.done
	}
	tk.clock.stop()
	tk.pool.close()
	tk.pool.all.Wait() // handlers abandoned after a timeout may still run
	close(done)
}
