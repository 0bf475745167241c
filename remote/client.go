package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/wire"
	"github.com/toolstream/toolstream/toolkit"
)

// MetaWorker is the result metadata key under which a remote call records
// the id of the worker that ran it (UIs show it; the model never sees it).
const MetaWorker = "worker"

// MetaAlsoTakenBy is the result metadata key that lists the other workers
// that took the same call ([]string), which happens only when workers of
// the tool are in different queue groups: each was told to stop as soon as
// its first frame came, but its tool may have begun its work.
const MetaAlsoTakenBy = "also_taken_by"

// MetaOmitted is the result metadata key set (to true) when the worker's
// result was too large for one NATS message even without its content, and
// its metadata was left out.
const MetaOmitted = "meta_omitted"

var (
	// ErrNoWorkers: no worker serves the tool (NATS answered "no
	// responders"). The call was not run; it fails at once.
	ErrNoWorkers = errors.New("no worker serves the tool")
	// ErrBusy: every worker tried refused the call, its queue being full or
	// the worker stopping (the refusal says which), until the call's
	// deadline or as many times as WithBusyRetries allows. The call was not run.
	ErrBusy = errors.New("every worker tried is busy")
	// ErrClientClosed: the call was made, or was still waiting for its
	// worker, when Client.Close was called.
	ErrClientClosed = errors.New("the remote client is closed")
)

// Client calls tools that workers serve.
type Client struct {
	nc      *nats.Conn
	opts    clientOptions
	control string // wire.ControlSubject of the prefix and service, but for the kind
	r       router
	stats   clientCounters
}

// ClientStats are a client's counters.
type ClientStats struct {
	// Sent counts the calls sent, each send again after a busy refusal
	// counted again.
	Sent uint64
	// Resent counts the sends after a busy refusal.
	Resent uint64
	// Dropped counts the messages that reached a call's inbox and were not
	// taken as its frames: a frame or refusal that names no worker or
	// another worker than the one that answered first, or a refusal or
	// "no responders" status after a worker answered.
	Dropped uint64
	// Resyncs counts the control messages sent after a reconnection, to
	// ask the workers for what the client may have missed.
	Resyncs uint64
}

type clientCounters struct {
	sent, resent, dropped, resyncs atomic.Uint64
}

// Stats returns the client's counters.
func (c *Client) Stats() ClientStats {
	return ClientStats{Sent: c.stats.sent.Load(), Resent: c.stats.resent.Load(),
		Dropped: c.stats.dropped.Load(), Resyncs: c.stats.resyncs.Load()}
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn, options ...ClientOption) *Client {
	opts := clientOptions{service: wire.DefaultService, prefix: wire.DefaultPrefix,
		heartbeat: defaultHeartbeat, missedHeartbeats: defaultMissedHeartbeats, busyRetries: -1,
		cancelWait: defaultCancelWait, discoverWait: defaultDiscoverWait, inject: injectTrace}
	for _, o := range options {
		o.applyClient(&opts)
	}
	// Workers send heartbeats no more often than this: a shorter interval
	// would give them up between two.
	opts.heartbeat = max(opts.heartbeat, minHeartbeat)
	return &Client{nc: nc, opts: opts, control: wire.ControlSubject(opts.prefix, opts.service, ""),
		r: router{closed: make(chan struct{})}}
}

// lostAfter is how long a call waits without a word from its worker before
// it fails with a *LostError.
func (c *Client) lostAfter() time.Duration {
	if n := time.Duration(c.opts.missedHeartbeats); n > math.MaxInt64/c.opts.heartbeat {
		return math.MaxInt64 // "never": no overflow into a bound already past
	}
	return c.opts.heartbeat * time.Duration(c.opts.missedHeartbeats)
}

// Discover asks the workers which tools they serve ($SRV.INFO) and returns
// one remote tool per name, sorted by name. A tool served by several
// workers is described by the first answer. It returns no tools and no
// error when no worker answers.
func (c *Client) Discover(ctx context.Context) ([]*toolkit.Tool, error) {
	return c.discover(ctx, "")
}

// Tool returns the remote tool name as a worker describes it, or an error
// wrapping ErrNoWorkers when none serves it.
func (c *Client) Tool(ctx context.Context, name string) (*toolkit.Tool, error) {
	tools, err := c.discover(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		if t.Name() == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("remote: tool %q: %w", name, ErrNoWorkers)
}

// Resolver returns a toolkit.ToolResolver that looks up calls of unknown
// tools among the workers' tools: install it with toolkit.WithToolResolver
// to call tools that workers started serving after the agent did.
func (c *Client) Resolver() toolkit.ToolResolver {
	return func(ctx context.Context, _ *toolkit.Session, call toolkit.Call) (*toolkit.Tool, error) {
		if toolkit.CheckToolName(call.Name) != nil {
			return nil, nil
		}
		t, err := c.Tool(ctx, call.Name)
		if errors.Is(err, ErrNoWorkers) {
			return nil, nil
		}
		return t, err
	}
}

// NewTool names a remote tool without asking the workers: spec and schema
// must be those the workers serve.
func (c *Client) NewTool(spec toolkit.Spec, inputSchema json.RawMessage) (*toolkit.Tool, error) {
	subject := c.opts.prefix + "." + spec.Name
	return toolkit.NewRawTool(spec, inputSchema, func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
		return c.call(ctx, spec.Name, subject, args)
	})
}

func (c *Client) discover(ctx context.Context, only string) ([]*toolkit.Tool, error) {
	subject, err := micro.ControlSubject(micro.InfoVerb, c.opts.service, "")
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	inbox := c.nc.NewRespInbox()
	ch := make(chan *nats.Msg, 1024)
	sub, err := c.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, fmt.Errorf("remote: discovering tools: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("remote: discovering tools: %w", err)
	}
	limit := time.NewTimer(c.opts.discoverWait)
	defer limit.Stop()
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	found := map[string]*toolkit.Tool{}
	var problems []string
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-limit.C:
			return c.tools(found, problems)
		case <-quiet.C:
			return c.tools(found, problems)
		case m := <-ch:
			if m.Header.Get("Status") == "503" {
				return nil, nil // no worker at all
			}
			var info micro.Info
			if err := json.Unmarshal(m.Data, &info); err != nil {
				problems = append(problems, "an answer that is not service info: "+err.Error())
				continue
			}
			if p := info.Metadata[wire.MetaProtocol]; p != protocol {
				problems = append(problems, fmt.Sprintf("worker %s speaks toolstream protocol %q, this client %q: its tools are left out", info.ID, p, protocol))
				quiet.Reset(100 * time.Millisecond)
				continue
			}
			for _, ep := range info.Endpoints {
				if only != "" && ep.Name != only || found[ep.Name] != nil {
					continue
				}
				t, err := c.fromEndpoint(ep)
				if err != nil {
					problems = append(problems, fmt.Sprintf("worker %s: %v", info.ID, err))
					continue
				}
				found[ep.Name] = t
			}
			if only != "" && found[only] != nil {
				return c.tools(found, nil)
			}
			quiet.Reset(100 * time.Millisecond)
		}
	}
}

func (c *Client) tools(found map[string]*toolkit.Tool, problems []string) ([]*toolkit.Tool, error) {
	out := make([]*toolkit.Tool, 0, len(found))
	for _, t := range found {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *toolkit.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	if len(out) == 0 && len(problems) > 0 {
		return nil, fmt.Errorf("remote: no usable tool: %s", strings.Join(problems, "; "))
	}
	return out, nil
}

func (c *Client) fromEndpoint(ep micro.EndpointInfo) (*toolkit.Tool, error) {
	var ws wireSpec
	if err := json.Unmarshal([]byte(ep.Metadata[wire.MetaSpec]), &ws); err != nil {
		return nil, fmt.Errorf("endpoint %q: metadata %s: %w", ep.Name, wire.MetaSpec, err)
	}
	if ws.Name != ep.Name {
		return nil, fmt.Errorf("endpoint %q describes a tool named %q", ep.Name, ws.Name)
	}
	// The calls go to <Prefix>.<tool> and nowhere else: a service that
	// answers under the workers' name must not make the agent publish the
	// model's arguments, with its credentials, on any subject it names.
	subject := c.opts.prefix + "." + ep.Name
	if ep.Subject != subject {
		return nil, fmt.Errorf("endpoint %q serves subject %q, not %q (the client's Prefix must be the workers'): its calls are not sent there", ep.Name, ep.Subject, subject)
	}
	spec := ws.spec()
	if out := ep.Metadata[wire.MetaOutputSchema]; out != "" {
		spec.OutputSchema = json.RawMessage(out)
	}
	t, err := toolkit.NewRawTool(spec, json.RawMessage(ep.Metadata[wire.MetaSchema]), func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
		return c.call(ctx, spec.Name, subject, args)
	})
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", ep.Name, err)
	}
	return t, nil
}

// WorkerError is a call that failed on the worker: its message is the
// worker engine's, word for word, so the model reads what it would have
// read had the tool run in process.
type WorkerError struct {
	Worker  string
	Tool    string
	State   events.State
	Message string
}

// Error returns the worker engine's message.
func (e *WorkerError) Error() string { return e.Message }

// Timeout reports a call that timed out on the worker (the Retry
// interceptor retries timeouts).
func (e *WorkerError) Timeout() bool { return e.State == events.StateTimeout }

// LostError is a call whose worker stopped sending heartbeats (it died,
// hangs or lost its connection) before the call ended: the call may or may
// not have done its work. Find it with errors.AsType[*LostError].
type LostError struct {
	Worker string // "" when no worker answered the call
	Tool   string
	After  time.Duration
	// Conn, when not "", is why the silence may be the agent's own: its
	// NATS connection was closed when the call was given up.
	Conn string
}

// Error says which worker went silent, for how long, and that the call may
// have done its work.
func (e *LostError) Error() string {
	if e.Conn != "" {
		who := "a worker (none had answered the call)"
		if e.Worker != "" {
			who = "worker " + e.Worker
		}
		return fmt.Sprintf("remote: no word on the call of %q for %v: this agent's own NATS connection is %s, so nothing from %s could reach it; the call may or may not have done its work",
			e.Tool, e.After, e.Conn, who)
	}
	if e.Worker == "" {
		return fmt.Sprintf("remote: no worker answered the call of %q within %v (it was lost, or its worker died); the call may or may not have done its work", e.Tool, e.After)
	}
	return fmt.Sprintf("remote: worker %s stopped answering the call of %q (no heartbeat for %v): it died, hangs or lost its connection; the call may or may not have done its work",
		e.Worker, e.Tool, e.After)
}

// Temporary tells the Retry interceptor that another attempt may work: it
// retries it for tools that are read-only, idempotent or silent about it,
// never for a tool that says it is not idempotent.
func (e *LostError) Temporary() bool { return true }
