package remote

// OnRequest makes every endpoint handler of w call f first, before it looks
// at the request: a test holds there a request that micro has handed over
// but the worker has not taken yet.
func OnRequest(w *Worker, f func()) { w.onRequest.Store(&f) }
