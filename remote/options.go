package remote

import (
	"cmp"
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// A WorkerOption configures [Serve].
type WorkerOption interface{ applyWorker(*workerOptions) }

// A ClientOption configures [NewClient].
type ClientOption interface{ applyClient(*clientOptions) }

// An Option configures workers and clients alike: the names they must
// agree on.
type Option interface {
	WorkerOption
	ClientOption
}

type workerOptions struct {
	service, prefix, queueGroup string
	maxInFlight                 int
	maxQueued, maxQueuedBytes   int
	keepResults                 time.Duration
	version                     string
	metadata                    map[string]string
	extract                     func(ctx context.Context, h nats.Header) context.Context
	tools                       []string
}

type clientOptions struct {
	service, prefix  string
	heartbeat        time.Duration
	missedHeartbeats int
	busyRetries      int // -1: until the call's deadline
	cancelWait       time.Duration
	discoverWait     time.Duration
	inject           func(ctx context.Context, h nats.Header)
}

type workerOption func(*workerOptions)

func (f workerOption) applyWorker(o *workerOptions) { f(o) }

type clientOption func(*clientOptions)

func (f clientOption) applyClient(o *clientOptions) { f(o) }

type sharedOption struct {
	worker workerOption
	client clientOption
}

func (s sharedOption) applyWorker(o *workerOptions) { s.worker(o) }
func (s sharedOption) applyClient(o *clientOptions) { s.client(o) }

// WithService sets the micro service name workers register under and
// clients discover ("toolstream_tools"): a client finds only the workers
// of its service. Empty keeps the default.
func WithService(name string) Option {
	return sharedOption{
		worker: func(o *workerOptions) { o.service = cmp.Or(name, o.service) },
		client: func(o *clientOptions) { o.service = cmp.Or(name, o.service) },
	}
}

// WithPrefix sets the subject prefix of the tools' endpoints
// ("toolstream._tools"): a tool's calls go to <prefix>.<tool>, and a
// client leaves out an endpoint whose subject is another. Workers and
// clients must agree. Empty keeps the default.
func WithPrefix(prefix string) Option {
	return sharedOption{
		worker: func(o *workerOptions) { o.prefix = cmp.Or(prefix, o.prefix) },
		client: func(o *clientOptions) { o.prefix = cmp.Or(prefix, o.prefix) },
	}
}

// WithQueueGroup sets the queue group the workers of a tool share
// ("toolstream"): NATS gives each call to one worker of the group.
// Empty keeps the default.
func WithQueueGroup(name string) WorkerOption {
	return workerOption(func(o *workerOptions) { o.queueGroup = cmp.Or(name, o.queueGroup) })
}

// WithMaxInFlight bounds the calls the worker runs at once (default 64).
// The calls above it wait in the worker's queue, in the order they came,
// bounded by their deadlines. Serve refuses n < 1.
func WithMaxInFlight(n int) WorkerOption {
	return workerOption(func(o *workerOptions) { o.maxInFlight = n })
}

// WithMaxQueued bounds the calls that wait for a free slot (default 8192;
// 0: none wait): a spike waits in the worker's queue, in the order it came,
// instead of failing. A call above it is refused with code 503, and its
// caller sends it again, to whichever worker NATS picks, until its
// deadline. Serve refuses n < 0.
func WithMaxQueued(n int) WorkerOption {
	return workerOption(func(o *workerOptions) { o.maxQueued = n })
}

// WithMaxQueuedBytes bounds the arguments of the calls that wait (default
// 64 MiB, NATS's own bound of a subscription's pending bytes); a call
// above it is refused as WithMaxQueued says. Serve refuses n < 0.
func WithMaxQueuedBytes(n int) WorkerOption {
	return workerOption(func(o *workerOptions) { o.maxQueuedBytes = n })
}

// WithKeepResults sets how long the worker keeps a call's result after
// sending it, to send it again when the caller reconnects or cancels
// (default 10 s; at most 16 MiB of results are kept). Serve refuses d <= 0.
func WithKeepResults(d time.Duration) WorkerOption {
	return workerOption(func(o *workerOptions) { o.keepResults = d })
}

// WithVersion sets the service's semantic version (default "1.0.0").
func WithVersion(v string) WorkerOption {
	return workerOption(func(o *workerOptions) { o.version = cmp.Or(v, o.version) })
}

// WithMetadata adds to the service's metadata (a worker's host name, say),
// as $SRV.INFO and `nats micro info` show it.
func WithMetadata(md map[string]string) WorkerOption {
	return workerOption(func(o *workerOptions) {
		if o.metadata == nil {
			o.metadata = map[string]string{}
		}
		for k, v := range md {
			o.metadata[k] = v
		}
	})
}

// WithExtract makes the context a call runs with from its request headers:
// the place to start a span from traceparent and tracestate (an
// OpenTelemetry propagator's Extract on a header carrier). Without it,
// [TraceContext] gives the two headers.
func WithExtract(extract func(ctx context.Context, h nats.Header) context.Context) WorkerOption {
	return workerOption(func(o *workerOptions) { o.extract = extract })
}

// WithTools limits the tools served to these names (default: every tool
// of the toolkit except external ones). Serve refuses a name the toolkit
// has no tool of, or an external tool.
func WithTools(names ...string) WorkerOption {
	return workerOption(func(o *workerOptions) { o.tools = append(o.tools, names...) })
}

// WithHeartbeat sets how often workers are asked to send a heartbeat
// while a call runs (default 1 s; at least 10 ms, as workers send them no
// more often), and how many intervals may pass without a word from the
// worker before the call fails with a *[LostError] (default 3). A
// worker's death is noticed within every × missed, whatever the call's
// timeout; time while the agent's own connection is away does not count.
// Zero or less keeps a default.
func WithHeartbeat(every time.Duration, missed int) ClientOption {
	return clientOption(func(o *clientOptions) {
		if every > 0 {
			o.heartbeat = every
		}
		if missed > 0 {
			o.missedHeartbeats = missed
		}
	})
}

// WithBusyRetries bounds how many more times a call refused as busy is
// sent (to whichever worker NATS picks), with a short jittered backoff
// (5 ms doubling to at most 200 ms); 0: never again. By default, or with
// n < 0, it is sent again until the call's deadline: a spike waits. A
// refused call never ran.
func WithBusyRetries(n int) ClientOption {
	return clientOption(func(o *clientOptions) { o.busyRetries = max(n, -1) })
}

// WithCancelWait sets how long a cancelled call waits for the worker to
// confirm that its handler stopped (default 200 ms, inside the toolkit's
// default cancel grace of 250 ms). Zero or less keeps the default.
func WithCancelWait(d time.Duration) ClientOption {
	return clientOption(func(o *clientOptions) {
		if d > 0 {
			o.cancelWait = d
		}
	})
}

// WithDiscoverWait bounds how long Discover listens for workers' answers
// (default 1 s; it ends 100 ms after the last answer). Zero or less keeps
// the default.
func WithDiscoverWait(d time.Duration) ClientOption {
	return clientOption(func(o *clientOptions) {
		if d > 0 {
			o.discoverWait = d
		}
	})
}

// WithInject writes the trace context of ctx into a call's headers (an
// OpenTelemetry propagator's Inject on a header carrier). By default the
// context's [WithTraceContext] values are sent, or else the call's own
// trace context when the agent's toolkit is traced.
func WithInject(inject func(ctx context.Context, h nats.Header)) ClientOption {
	return clientOption(func(o *clientOptions) {
		if inject != nil {
			o.inject = inject
		}
	})
}
