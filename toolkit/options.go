package toolkit

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/internal/tracehook"
)

// Defaults of a new toolkit; each option's doc says its default.
const (
	defaultMaxParallel   = 10
	defaultFlushTimeout  = 2 * time.Second
	defaultCancelGrace   = 250 * time.Millisecond
	defaultObserverQueue = 4096
)

// defaultTimeout bounds each call that sets no timeout of its own (see
// [WithDefaultTimeout]).
const defaultTimeout = 2 * time.Minute

type options struct {
	logger        zerolog.Logger
	observers     []observerReg
	maxParallel   int
	timeout       time.Duration
	flushTimeout  time.Duration
	cancelGrace   time.Duration
	observerQueue int
	resolver      ToolResolver // tools for unknown names (unknown.go)
	batchEnd      bool         // batch_end events (batchhook.go)
	tracer        tracer       // trace.go
}

func defaultOptions() options {
	return options{
		logger:        zerolog.Nop(),
		maxParallel:   defaultMaxParallel,
		timeout:       defaultTimeout,
		flushTimeout:  defaultFlushTimeout,
		cancelGrace:   defaultCancelGrace,
		observerQueue: defaultObserverQueue,
	}
}

// Option configures a [Toolkit].
type Option func(*options)

// WithLogger sets the logger. The toolkit is silent by default.
func WithLogger(l zerolog.Logger) Option { return func(o *options) { o.logger = l } }

type observerReg struct {
	obs    Observer
	inline bool
}

// WithObserver attaches an asynchronous observer of every call's events: it
// runs on its own goroutine and can never slow a tool down (see [Observer]).
func WithObserver(obs Observer) Option {
	return func(o *options) {
		if obs != nil {
			o.observers = append(o.observers, observerReg{obs: obs})
		}
	}
}

// WithInlineObserver attaches an observer that runs on the goroutine that
// emits each event. It must be quick and must not block (see [Observer]).
func WithInlineObserver(obs Observer) Option {
	return func(o *options) {
		if obs != nil {
			o.observers = append(o.observers, observerReg{obs: obs, inline: true})
		}
	}
}

// WithMaxParallel caps how many concurrency-safe calls of one batch execute at
// once (default 10). Values below 1 mean 1.
func WithMaxParallel(n int) Option { return func(o *options) { o.maxParallel = max(n, 1) } }

// WithDefaultTimeout sets the timeout of calls whose tool sets none (2
// minutes by default). Zero or a negative value means no default timeout.
func WithDefaultTimeout(d time.Duration) Option { return func(o *options) { o.timeout = max(d, 0) } }

// WithFlushTimeout bounds how long a batch that has finished waits for its
// observers to receive its result events before it reports completion
// (default 2 s).
func WithFlushTimeout(d time.Duration) Option { return func(o *options) { o.flushTimeout = max(d, 0) } }

// WithCancelGrace sets how long a handler whose context was cancelled (by a
// timeout or by the caller) may take to return. After that the call is
// reported without waiting for it and the handler's goroutine is left to
// finish on its own. The default is 250 ms.
func WithCancelGrace(d time.Duration) Option { return func(o *options) { o.cancelGrace = max(d, 0) } }

// WithObserverQueue sets how many progress events may wait for one observer
// before newer progress events are dropped (start, delta, suspend and result
// events are never dropped). The default is 4,096.
func WithObserverQueue(n int) Option { return func(o *options) { o.observerQueue = max(n, 1) } }

// WithTracer traces and measures the toolkit's batches and calls with t, a
// *telemetry.Telemetry (package telemetry, OpenTelemetry): every event of a
// traced call carries its span's trace context (events.Event.Trace), and
// the call's context carries its span for the handler's own. The hook t
// implements is internal so that the engine imports no tracing library
// and shows no tracing types. Toolkits derived from this one
// (Toolkit.Derive) use it too.
func WithTracer(t tracehook.Source[*Batch, CallInfo, *Tool]) Option {
	var tr tracer
	if t != nil {
		tr = t.Tracehook()
	}
	return func(o *options) { o.tracer = tr }
}

// WithToolResolver installs a resolver for calls to tools nobody
// registered; see [ToolResolver].
func WithToolResolver(r ToolResolver) Option { return func(o *options) { o.resolver = r } }

// WithBatchEndEvents makes the toolkit send a session-level batch_end event
// (events.TypeBatchEnd, its Data an events.BatchEnd) when a batch is over:
// each call's final state in call order and whether the agent loop must
// stop. Observers see it after the batch's result events. Off by default:
// it is one more event per batch.
func WithBatchEndEvents() Option { return func(o *options) { o.batchEnd = true } }
