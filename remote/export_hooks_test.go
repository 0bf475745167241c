//go:build toolstream_testhooks

package remote

import "testing"

// OnRequest makes every endpoint handler of w call f first, before it looks
// at the request: a test holds there a request that micro has handed over
// but the worker has not taken yet. The hook goes at the end of the test.
func OnRequest(t testing.TB, w *Worker, f func()) {
	onRequest.Store(w, f)
	t.Cleanup(func() { onRequest.Delete(w) })
}

// OnBackoff makes c call f when a call refused as busy starts waiting to
// be sent again. Set it before the first call; it goes at the end of the
// test.
func OnBackoff(t testing.TB, c *Client, f func()) {
	onBackoff.Store(c, f)
	t.Cleanup(func() { onBackoff.Delete(c) })
}
