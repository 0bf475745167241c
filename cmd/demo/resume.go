package main

import (
	"context"

	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// useStore keeps the tour's calls and conversation in JetStream key-value
// storage (package durable) when -store keeps the server's files: a
// finished call is never run again, and the runner resumes an unfinished
// run of the session. Without -store it does nothing.
func useStore(ctx context.Context, cfg *config, tk *toolkit.Toolkit, bus *natsbus.Bus) (*durable.Store, func(), error) {
	if cfg.store == "" {
		return nil, func() {}, nil
	}
	st, err := durable.New(ctx, bus.JetStream(), "")
	if err != nil {
		return nil, nil, err
	}
	if err := tk.Use(st.Interceptor()); err != nil {
		return nil, nil, err
	}
	stopDeliver, err := st.Deliver(ctx, tk)
	if err != nil {
		return nil, nil, err
	}
	return st, stopDeliver, nil
}
