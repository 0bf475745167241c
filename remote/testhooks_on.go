//go:build toolstream_testhooks

package remote

import "sync"

// Test hooks: they hold a worker's handler, or a client's call, in a window
// where no caller's code runs (see docs/rough-edges.md). They exist only in
// builds with the toolstream_testhooks tag; testhooks_off.go has the empty
// functions a production build inlines away. The tests that set them carry
// the same tag (export_hooks_test.go).

// onRequest maps a *Worker to the func() that runs first in every endpoint
// handler of it: tests hold a request there, delivered by micro but not yet
// taken. onBackoff maps a *Client to the func() that runs when a call
// refused as busy starts waiting to be sent again.
var onRequest, onBackoff sync.Map

func requestHook(w *Worker) {
	if f, ok := onRequest.Load(w); ok {
		f.(func())()
	}
}

func backoffHook(c *Client) {
	if f, ok := onBackoff.Load(c); ok {
		f.(func())()
	}
}
