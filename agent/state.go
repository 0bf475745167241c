package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
)

// ErrNoState is the cause of a State's Set or Update on a context that
// holds no run's state: not one a tool, interceptor or batch hook of
// Loop.Run (or of code under [WithState], such as durable.Resume) was
// given. A tool run by a remote worker gets none either: the state stays
// with the loop.
var ErrNoState = errors.New("agent: the context holds no run's state")

// State is a piece of a run's state, typed as T, that tools read and update
// through the context they are given (Spring AI Alibaba's state-aware
// tools, AgentScope's ToolContext): a cart, the files a task touched, a
// plan's progress. Interceptors and batch hooks reach it the same way. It
// lives in the conversation (Conversation.State, under the key, as JSON),
// so it is saved and restored with it: the next run of the conversation,
// or a run resumed by durable, sees what the tools wrote.
//
// A sub-agent's Loop.Run inside a call has its own conversation's state,
// not its parent's.
//
// Make one State per piece of state, usually beside the tools that share
// it; the key names it in the conversation ("cart", "myapp.plan"). The
// value is its JSON: what JSON leaves out (unexported fields) is not kept,
// and every Get decodes a copy of its own, so a tool never shares maps or
// slices with another.
type State[T any] struct{ key string }

// NewState returns the state stored under key.
func NewState[T any](key string) *State[T] { return &State[T]{key: key} }

// Key returns the key the state is stored under.
func (s *State[T]) Key() string { return s.key }

// Get returns the run's value, and whether it has one: false without a
// value under the key, on a context that holds no run's state, and for a
// value that does not decode as T (Update says why).
func (s *State[T]) Get(ctx context.Context) (T, bool) {
	var v T
	rs := stateFrom(ctx)
	if rs == nil {
		return v, false
	}
	rs.mu.Lock()
	raw, ok := rs.values[s.key]
	rs.mu.Unlock()
	if !ok || json.Unmarshal(raw, &v) != nil {
		var zero T
		return zero, false
	}
	return v, true
}

// Set makes v the run's value.
func (s *State[T]) Set(ctx context.Context, v T) error {
	return s.Update(ctx, func(p *T) { *p = v })
}

// Update changes the run's value: fn gets it (the zero T when there is
// none) and changes it in place. Updates of one run happen one at a time,
// so the calls of a batch running at once may update the same state; fn
// must not use the run's state itself. The value is kept only if it
// marshals to JSON: otherwise, or when the value held does not decode as
// T, Update returns why and the value held stays as it was.
func (s *State[T]) Update(ctx context.Context, fn func(*T)) error {
	if s.key == "" {
		return errors.New("agent: a State needs a key (NewState)")
	}
	rs := stateFrom(ctx)
	if rs == nil {
		return fmt.Errorf("%w: state %q is for the tools of Loop.Run (or of code under WithState)", ErrNoState, s.key)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.ended {
		return fmt.Errorf("agent: state %q: the run is over, its conversation saved: the update would be lost", s.key)
	}
	var v T
	if raw, ok := rs.values[s.key]; ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("agent: state %q holds %s, which does not decode as %T: %w", s.key, clip(raw), v, err)
		}
	}
	fn(&v)
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("agent: state %q: the new value (%T) does not marshal to JSON, so the old one stays: %w", s.key, v, err)
	}
	if rs.values == nil {
		rs.values = map[string]json.RawMessage{}
	}
	rs.values[s.key] = raw
	rs.changed = true
	return nil
}

func clip(raw []byte) string {
	if len(raw) > 80 {
		return string(raw[:77]) + "..."
	}
	return string(raw)
}

type stateKey struct{}

// runState is the state of one run, shared by its calls through their
// contexts. The conversation gets a copy when the loop saves it: calls
// still running may update the run's while the conversation is stored.
type runState struct {
	mu      sync.Mutex
	values  map[string]json.RawMessage
	changed bool // since the last save
	ended   bool // the last save is done: a late update would be lost
}

func stateFrom(ctx context.Context) *runState {
	if ctx == nil {
		return nil
	}
	rs, _ := ctx.Value(stateKey{}).(*runState)
	return rs
}

// WithState returns a context whose tools, interceptors and batch hooks
// read and update conv's state ([State]), for code that runs a
// conversation's calls outside Loop.Run (durable.Resume does), and end,
// which writes what they changed into conv.State once the calls are over.
// An update after end fails. Loop.Run does this itself.
func WithState(ctx context.Context, conv *Conversation) (context.Context, func()) {
	if ctx == nil || conv == nil {
		return ctx, func() {} // the calls say what is wrong with a nil context
	}
	rs := &runState{values: maps.Clone(conv.State)}
	return context.WithValue(ctx, stateKey{}, rs), func() { rs.save(conv, true) }
}

// save writes the run's values into conv when they changed; with end, an
// update afterwards fails instead of being lost.
func (rs *runState) save(conv *Conversation, end bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.changed {
		conv.State = maps.Clone(rs.values)
		rs.changed = false
	}
	rs.ended = rs.ended || end
}
