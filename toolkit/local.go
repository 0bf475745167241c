package toolkit

import (
	"sync"
	"sync/atomic"
)

// Local is state an interceptor or a batch hook keeps per call, per batch,
// per run or per session, typed as T: what [Value] is to a context, a Local
// is to a call, a batch, a run or a session. The Local itself is the key (make one per
// piece of state, usually when the interceptor is built), so two
// interceptors never see each other's values unless they share the Local.
//
// A call local lives as long as the call's interceptors run and is the same
// across attempts: a retry runs the inner interceptors again on the same
// call, so an interceptor that must act once per call (add a delta filter,
// count the call) keeps its mark there. A batch local is dropped when the
// batch ends, a run local when its run ends ([Session.BeginRun]), a session
// local by Session.Close. The zero Local is a call
// local. Its methods are safe for concurrent use.
type Local[T any] struct{ id localID }

// localID is a Local's identity, the key of its values in a scope's store.
// It is not empty, so that two Locals never share an address.
type localID struct{ kind localKind }

type localKind uint8

const (
	callLocal localKind = iota
	batchLocal
	runLocal
	sessionLocal
)

// NewCallLocal returns a local that holds one value per call.
func NewCallLocal[T any]() *Local[T] { return &Local[T]{localID{callLocal}} }

// NewBatchLocal returns a local that holds one value per batch, shared by
// its calls' interceptors and its Before hooks.
func NewBatchLocal[T any]() *Local[T] { return &Local[T]{localID{batchLocal}} }

// NewRunLocal returns a local that holds one value per run
// ([Session.BeginRun]: one agent.Loop.Run), shared by the interceptors and
// batch hooks of every batch of the run (a limit per run). A batch started
// outside a run is a run of its own: there a run local is a batch local.
func NewRunLocal[T any]() *Local[T] { return &Local[T]{localID{runLocal}} }

// NewSessionLocal returns a local that holds one value per session, shared
// by the interceptors and batch hooks of every batch of the session (per
// session counters, rules a person approved).
func NewSessionLocal[T any]() *Local[T] { return &Local[T]{localID{sessionLocal}} }

// LocalScope is where locals are read: an *Invocation (its call, batch, run
// and session) or a *BatchPlan (its batch, run and session; a plan has no call, so a
// call local there holds nothing: Get reports false, Set is ignored and
// LoadOrInit returns init's value without keeping it).
type LocalScope interface {
	locals(kind localKind, create bool) *localStore
}

// Get returns the value s holds for l, if one was set.
func (l *Local[T]) Get(s LocalScope) (T, bool) {
	if st := s.locals(l.id.kind, false); st != nil {
		if v, ok := st.get(&l.id); ok {
			return v.(T), true
		}
	}
	var zero T
	return zero, false
}

// Set makes v the value s holds for l.
func (l *Local[T]) Set(s LocalScope, v T) {
	if st := s.locals(l.id.kind, true); st != nil {
		st.set(&l.id, v)
	}
}

// LoadOrInit returns the value s holds for l, setting it to init() first
// if there is none. init runs at most once per call, batch or session (a
// concurrent LoadOrInit of the same value waits for it), so it may have
// side effects, such as adding a delta filter; it must not use l itself.
// If init panics, nothing is kept and the next LoadOrInit tries again.
func (l *Local[T]) LoadOrInit(s LocalScope, init func() T) T {
	st := s.locals(l.id.kind, true)
	if st == nil {
		return init()
	}
	return st.loadOrInit(&l.id, func() any { return init() }).(T)
}

func (inv *Invocation) locals(kind localKind, create bool) *localStore {
	switch kind {
	case callLocal:
		return &inv.c.ic.locals
	case batchLocal:
		return inv.c.batch.localStore(create)
	case runLocal:
		return inv.c.batch.runStore(create)
	default:
		return inv.c.batch.sess.localStore(create)
	}
}

func (p *BatchPlan) locals(kind localKind, create bool) *localStore {
	switch kind {
	case callLocal:
		return nil
	case batchLocal:
		return p.g.b.localStore(create)
	case runLocal:
		return p.g.b.runStore(create)
	default:
		return p.g.b.sess.localStore(create)
	}
}

// localStore holds one call's, batch's, run's or session's local values. Scopes
// hold a few (one per interceptor that keeps state, say): a slice searched
// in order costs less than a map.
type localStore struct {
	used    atomic.Bool // an entry was ever added: clear has work (a call's end pays no lock otherwise)
	mu      sync.Mutex
	entries []localEntry
}

type localEntry struct {
	id    *localID
	v     any
	ready bool          // v is set; otherwise an init is running
	wait  chan struct{} // closed when a running init ends; made by the first to wait
}

// find returns the index of id's entry, or -1. s.mu must be held.
func (s *localStore) find(id *localID) int {
	for i := range s.entries {
		if s.entries[i].id == id {
			return i
		}
	}
	return -1
}

func (s *localStore) get(id *localID) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.find(id); i >= 0 && s.entries[i].ready {
		return s.entries[i].v, true
	}
	return nil, false
}

func (s *localStore) set(id *localID, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(id)
	if i < 0 {
		s.used.Store(true)
		s.entries = append(s.entries, localEntry{id: id, v: v, ready: true})
		return
	}
	e := &s.entries[i]
	e.v, e.ready = v, true
	if e.wait != nil { // an init is running: its waiters take v
		close(e.wait)
		e.wait = nil
	}
}

func (s *localStore) loadOrInit(id *localID, init func() any) any {
	s.mu.Lock()
	for {
		i := s.find(id)
		if i < 0 {
			break
		}
		e := &s.entries[i]
		if e.ready {
			v := e.v
			s.mu.Unlock()
			return v
		}
		if e.wait == nil {
			e.wait = make(chan struct{})
		}
		w := e.wait
		s.mu.Unlock()
		<-w
		s.mu.Lock()
	}
	s.used.Store(true)
	s.entries = append(s.entries, localEntry{id: id}) // running: others wait
	s.mu.Unlock()
	done := false
	defer func() {
		if !done { // init panicked: drop the entry, let a waiter try
			s.mu.Lock()
			if i := s.find(id); i >= 0 && !s.entries[i].ready {
				if w := s.entries[i].wait; w != nil {
					close(w)
				}
				s.entries = append(s.entries[:i], s.entries[i+1:]...)
			}
			s.mu.Unlock()
		}
	}()
	v := init()
	done = true
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(id)
	if i < 0 {
		return v // the scope ended while init ran: nothing is kept
	}
	e := &s.entries[i]
	if !e.ready { // a Set while init ran wins
		e.v, e.ready = v, true
		if e.wait != nil {
			close(e.wait)
			e.wait = nil
		}
	}
	return e.v
}

// clear drops the values when their scope ends. An init still running
// keeps nothing; those waiting for it run their own.
func (s *localStore) clear() {
	if !s.used.Load() {
		return
	}
	s.mu.Lock()
	for _, e := range s.entries {
		if e.wait != nil {
			close(e.wait)
		}
	}
	clear(s.entries) // let the values go even if s lives on
	s.entries = nil
	s.mu.Unlock()
}

// localStore returns the batch's locals, made if create is set.
func (b *Batch) localStore(create bool) *localStore {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.locals == nil && create {
		b.locals = new(localStore)
	}
	return b.locals
}

// localStore returns the session's locals, made if create is set.
func (s *Session) localStore(create bool) *localStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locals == nil && create {
		s.locals = new(localStore)
	}
	return s.locals
}
