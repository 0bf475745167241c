package agent

import "context"

// ModelInterceptor wraps each model call, as a toolkit.Interceptor wraps
// each tool call (Spring AI Alibaba's ModelInterceptor, Solon AI's
// interceptCall and interceptStream): it may change the request before
// calling next, answer without calling it (a cache, a canned reply),
// change or replace the reply, or see the stream by calling next with a
// copy of req whose Stream sees each chunk and hands it on with
// req.Send. It must not change req.Messages' elements in place (they
// are the stored conversation's): assign a new slice.
//
// Interceptors run in the order given, the first given outermost. The
// loop's retries sit outside the chain: every attempt (WithRetry,
// Hooks.ModelFailed) runs every interceptor again, with the request
// assembled for it, so that a rewrite applies to each attempt once. An
// interceptor that calls next more than once itself must not let the
// chunks of a failed attempt through: UIs are told to drop them only by
// the loop's own model_retry event.
//
// With a method value, one Go value can be both a model and a tool
// interceptor (agent.WithModelInterceptor(a.Model) and
// tk.Use(toolkit.Interceptor{Name: "a", Intercept: a.Tool})).
type ModelInterceptor func(ctx context.Context, req *Request, next Model) (*Reply, error)

// WithModelInterceptor adds interceptors around the model, after those
// given before.
func WithModelInterceptor(ics ...ModelInterceptor) Option {
	return func(l *Loop) { l.interceptors = append(l.interceptors, ics...) }
}

// chain returns m wrapped in ics, the first outermost; m itself when there
// are none.
func chain(m Model, ics []ModelInterceptor) Model {
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], m
		if ic == nil {
			continue
		}
		m = ModelFunc(func(ctx context.Context, req *Request) (*Reply, error) { return ic(ctx, req, next) })
	}
	return m
}
