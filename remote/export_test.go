package remote

import "time"

// OnRequest makes every endpoint handler of w call f first, before it looks
// at the request: a test holds there a request that micro has handed over
// but the worker has not taken yet.
func OnRequest(w *Worker, f func()) { w.onRequest.Store(&f) }

// OnBackoff makes c call f when a call refused as busy starts waiting to
// be sent again. Set it before the first call.
func OnBackoff(c *Client, f func()) { c.onBackoff = f }

// LostAfter is how long a call of c waits without a word from its worker
// before it fails with *LostError.
func LostAfter(c *Client) time.Duration { return c.lostAfter() }
