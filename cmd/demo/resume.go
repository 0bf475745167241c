package main

import (
	"context"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// sessionStores are where a session's state lives when -store keeps the
// server's files, so that a resumed run sees the session as it was: its
// calls and conversation, the grants people added and the skills it loaded
// (package durable), and its tool groups (package groups/natskv). Without
// -store, all of them are nil and the state is in memory.
type sessionStores struct {
	calls  *durable.Store
	groups *natskv.Store
}

// openStores opens the key-value buckets of -store (none without it).
func openStores(ctx context.Context, cfg *config, bus *natsbus.Bus) (sessionStores, error) {
	if cfg.store == "" {
		return sessionStores{}, nil
	}
	calls, err := durable.New(ctx, bus.JetStream(), "")
	if err != nil {
		return sessionStores{}, err
	}
	gs, err := natskv.New(ctx, bus.JetStream(), "")
	if err != nil {
		return sessionStores{}, err
	}
	return sessionStores{calls: calls, groups: gs}, nil
}

func (s sessionStores) groupOptions() []groups.Option {
	if s.groups == nil {
		return nil
	}
	return []groups.Option{groups.WithStore(s.groups)}
}

func (s sessionStores) skillOptions() []skills.Option {
	if s.calls == nil {
		return nil
	}
	return []skills.Option{skills.WithStore(s.calls)}
}

func (s sessionStores) permissionOptions() []interceptors.PermissionOption {
	if s.calls == nil {
		return nil
	}
	return []interceptors.PermissionOption{interceptors.WithGrantStore(s.calls)}
}

// useStore keeps the tour's calls in the durable store (its interceptor,
// installed before the others: outermost) and delivers answers given to
// it: a finished call is never run again, and the runner resumes an
// unfinished run of the session. Without -store it does nothing.
func useStore(ctx context.Context, st *durable.Store, tk *toolkit.Toolkit) (func(), error) {
	if st == nil {
		return func() {}, nil
	}
	if err := tk.Use(st.Interceptor()); err != nil {
		return nil, err
	}
	return st.Deliver(ctx, tk)
}
