// Package interceptors holds ready-made [toolkit.Interceptor]s: retries,
// timeouts, rate and call limits, loop detection, error policies,
// large-result eviction, sanitizing and redaction, permissions with human
// approval, tool emulation and audit logging.
//
// Each constructor returns a toolkit.Interceptor with a fixed default name
// (the second column below, also its Name field); add it with
// Toolkit.Use, switch it with EnableInterceptor, and set its Name field to
// use two of a kind side by side. Set its Tools or Match field to scope it
// to some tools. The first interceptor added is the outermost.
//
//	Constructor                Name         What it does
//	Audit                      audit        one zerolog line per call
//	ErrorPolicy                errors       rewrites failure messages, fatal failures
//	NewPermissions(...).Interceptor()
//	                           permissions  allow / ask a person / deny, per tool and argument
//	CallLimits                 limits       caps calls per turn/run/session, total/per tool
//	LoopGuard                  loopguard    refuses the n-th identical call in a window
//	Evict                      evict        stores huge results, shows where and the first lines
//	Sanitize                   sanitize     placeholder, truncation, redaction
//	Retry                      retry        runs failed calls again, exponential backoff
//	RateLimit                  ratelimit    token bucket per tool (x/time/rate)
//	Timeout                    timeout      deadline per call, or per attempt inside Retry
//	Emulate                    emulator     an LLM answers instead of the tool
//
// The table is also a sensible order, outermost first:
//
//	tk.Use(
//		interceptors.Audit(log),                  // records what the model finally gets
//		interceptors.ErrorPolicy(),               // sees the final failure, not each attempt
//		perms.Interceptor(),                      // asks once per call, not per attempt
//		interceptors.CallLimits(interceptors.PerRun(20)),
//		interceptors.LoopGuard(3, 10*time.Minute),
//		interceptors.Evict(),                     // stores the final, redacted result
//		interceptors.Sanitize(interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0)),
//		interceptors.Retry(),
//		interceptors.RateLimit(limits, 1),        // each attempt takes a token
//		interceptors.Timeout(30*time.Second),     // a deadline per attempt
//	)
//
// Interceptors that wait for people (those calling Invocation.Suspend, such
// as permissions) go before Timeout, or its deadline runs during the wait.
//
// Refusals and failures are results the model reads, never Go errors of the
// run: each tells the model what happened and what to do instead, with a
// cause for errors.Is ([ErrLimit], [ErrLoop], [ErrRateLimited], [ErrDenied],
// toolkit.ErrTimeout, ...).
package interceptors
