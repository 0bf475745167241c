package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// MetaWorker is the result metadata key under which a remote call records
// the id of the worker that ran it (UIs show it; the model never sees it).
const MetaWorker = "worker"

// MetaAlsoTakenBy is the result metadata key that lists the other workers
// that took the same call ([]string), which happens only when workers of
// the tool are in different queue groups: each was told to stop as soon as
// its accept frame came, but its tool may have begun its work.
const MetaAlsoTakenBy = "also_taken_by"

// MetaOmitted is the result metadata key set (to true) when the worker's
// result was too large for one NATS message even without its content, and
// its metadata was left out.
const MetaOmitted = "meta_omitted"

var (
	// ErrNoWorkers: no worker serves the tool (NATS answered "no
	// responders"). The call was not run; it fails at once.
	ErrNoWorkers = errors.New("no worker serves the tool")
	// ErrBusy: every worker tried refused the call for being at its limit
	// of calls in flight or stopping (the refusal says which). The call
	// was not run.
	ErrBusy = errors.New("every worker tried is busy")
	// ErrWorkerLost: the worker stopped sending heartbeats (it died, hangs
	// or lost its connection) before the call ended. The call may or may
	// not have done its work.
	ErrWorkerLost = errors.New("the worker stopped answering")
)

// ClientOptions configure a client. The zero value of a field picks its
// default.
type ClientOptions struct {
	// Service and Prefix must match the workers' (DefaultService,
	// DefaultPrefix). A tool's calls go to <Prefix>.<tool> only: Discover
	// and Tool leave out an endpoint whose subject is another.
	Service string
	Prefix  string
	// Heartbeat is how often workers are asked to send a heartbeat while
	// a call runs (DefaultHeartbeat; at least 10 ms, as workers send them
	// no more often).
	Heartbeat time.Duration
	// MissedHeartbeats is how many heartbeat intervals may pass without a
	// word from the worker before the call fails with ErrWorkerLost
	// (DefaultMissedHeartbeats). A worker's death is noticed within
	// Heartbeat × MissedHeartbeats, whatever the call's timeout.
	MissedHeartbeats int
	// BusyRetries is how many more times a call refused as busy is sent
	// (to whichever worker NATS picks), with a short jittered backoff
	// (5 ms doubling to at most 200 ms; default 3; negative: none). A
	// refused call never ran.
	BusyRetries int
	// CancelWait is how long a cancelled call waits for the worker to
	// confirm that its handler stopped (default 200 ms, inside the
	// toolkit's default cancel grace of 250 ms). A worker that refuses the
	// cancellation, or does not run the call, ends the wait at once.
	CancelWait time.Duration
	// DiscoverWait bounds how long Discover listens for workers' answers
	// (default 1 s; it ends 100 ms after the last answer).
	DiscoverWait time.Duration
	// Inject, if set, writes the trace context of ctx into a call's
	// headers (an OpenTelemetry propagator's Inject on a header carrier).
	// By default the context's WithTraceContext values are sent, or else
	// the call's own trace context (toolkit.TraceOf) when the agent's
	// toolkit is traced.
	Inject func(ctx context.Context, h nats.Header)
}

// Client calls tools that workers serve.
type Client struct {
	nc   *nats.Conn
	opts ClientOptions
	r    router
	// onBackoff, if set, runs when a call refused as busy starts waiting
	// to be sent again (tests).
	onBackoff func()
}

// ErrClientClosed: the call was made, or was still waiting for its worker,
// when Client.Close was called.
var ErrClientClosed = errors.New("the remote client is closed")

// router hands the frames of the calls in flight to their followers. The
// client has one wildcard subscription for all its calls, made on the first
// call, rather than one per call: a subscription made and dropped per call
// would make every server of a cluster learn and forget an inbox each time.
type router struct {
	once   sync.Once
	err    error
	sub    *nats.Subscription
	prefix string        // the inboxes' common prefix, ending in "."
	closed chan struct{} // closed by Close

	mu    sync.Mutex
	calls map[string]*mailbox // by inbox
	next  uint64
	shut  bool
}

// open gives a call its inbox and the mailbox its frames arrive in; done
// forgets it.
func (c *Client) open() (inbox string, ch *mailbox, done func(), err error) {
	r := &c.r
	r.once.Do(func() {
		r.prefix = c.nc.NewInbox() + "."
		r.calls = map[string]*mailbox{}
		r.sub, r.err = c.nc.Subscribe(r.prefix+"*", r.route)
	})
	if r.err != nil {
		return "", nil, nil, r.err
	}
	ch = &mailbox{ready: make(chan struct{}, 1)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return "", nil, nil, ErrClientClosed
	}
	r.next++
	inbox = r.prefix + strconv.FormatUint(r.next, 36)
	r.calls[inbox] = ch
	return inbox, ch, func() {
		r.mu.Lock()
		delete(r.calls, inbox)
		r.mu.Unlock()
	}, nil
}

// route runs on the subscription's goroutine and never waits: a follower
// behind by the pending limits of a subscription of its own loses the
// frame, as a slow consumer of that subscription would, and sees the gap in
// the frame numbers.
func (r *router) route(m *nats.Msg) {
	r.mu.Lock()
	ch := r.calls[m.Subject]
	r.mu.Unlock()
	if ch == nil {
		return // a call that ended: a late heartbeat or a repeated frame
	}
	ch.put(m)
}

// mailbox holds one call's frames until its follower takes them. It is
// bounded as one subscription per call was (nats.go's default pending
// limits), not by a small channel: a tool that streams a result larger than
// one NATS message in many small deltas sends frames faster than the
// caller's engine emits them, and a lost delta then fails the whole call
// (its result frame leaves the content out).
type mailbox struct {
	mu    sync.Mutex
	q     []*nats.Msg
	bytes int
	ready chan struct{} // holds a token while q is not empty
}

func (b *mailbox) put(m *nats.Msg) {
	b.mu.Lock()
	if len(b.q) >= nats.DefaultSubPendingMsgsLimit || b.bytes+len(m.Data) > nats.DefaultSubPendingBytesLimit {
		b.mu.Unlock()
		return
	}
	b.q = append(b.q, m)
	b.bytes += len(m.Data)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take returns the oldest frame, or nil; it leaves the token in ready when
// more wait.
func (b *mailbox) take() *nats.Msg {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.q) == 0 {
		return nil
	}
	m := b.q[0]
	b.q[0] = nil
	b.q = b.q[1:]
	b.bytes -= len(m.Data)
	if len(b.q) > 0 {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
	return m
}

// Close drops the client's subscription. Calls still waiting for their
// workers fail with ErrClientClosed at once, and so do later calls; the
// workers finish theirs. Close does not close the NATS connection.
func (c *Client) Close() error {
	r := &c.r
	r.once.Do(func() {}) // no subscription is made after Close
	r.mu.Lock()
	if r.shut {
		r.mu.Unlock()
		return nil
	}
	r.shut = true
	r.mu.Unlock()
	close(r.closed)
	if r.sub == nil {
		return nil
	}
	return r.sub.Unsubscribe()
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn, opts ClientOptions) *Client {
	if opts.Service == "" {
		opts.Service = DefaultService
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	// Workers send heartbeats no more often than this: a shorter interval
	// would give them up between two.
	opts.Heartbeat = max(opts.Heartbeat, minHeartbeat)
	if opts.MissedHeartbeats <= 0 {
		opts.MissedHeartbeats = DefaultMissedHeartbeats
	}
	if opts.BusyRetries == 0 {
		opts.BusyRetries = 3
	}
	if opts.CancelWait <= 0 {
		opts.CancelWait = 200 * time.Millisecond
	}
	if opts.DiscoverWait <= 0 {
		opts.DiscoverWait = time.Second
	}
	if opts.Inject == nil {
		opts.Inject = injectTrace
	}
	return &Client{nc: nc, opts: opts, r: router{closed: make(chan struct{})}}
}

// LostAfter is how long a call waits without a word from its worker before
// it fails with ErrWorkerLost.
func (c *Client) LostAfter() time.Duration {
	if n := time.Duration(c.opts.MissedHeartbeats); n > math.MaxInt64/c.opts.Heartbeat {
		return math.MaxInt64 // "never": no overflow into a bound already past
	}
	return c.opts.Heartbeat * time.Duration(c.opts.MissedHeartbeats)
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
	subject := c.opts.Prefix + "." + spec.Name
	return toolkit.NewRawTool(spec, inputSchema, func(ctx context.Context, args json.RawMessage) ([]toolkit.Part, error) {
		return c.call(ctx, spec.Name, subject, args)
	})
}

func (c *Client) discover(ctx context.Context, only string) ([]*toolkit.Tool, error) {
	subject, err := micro.ControlSubject(micro.InfoVerb, c.opts.Service, "")
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
	limit := time.NewTimer(c.opts.DiscoverWait)
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
			if p := info.Metadata[MetaProtocol]; p != protocol {
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
	if err := json.Unmarshal([]byte(ep.Metadata[MetaSpec]), &ws); err != nil {
		return nil, fmt.Errorf("endpoint %q: metadata %s: %w", ep.Name, MetaSpec, err)
	}
	if ws.Name != ep.Name {
		return nil, fmt.Errorf("endpoint %q describes a tool named %q", ep.Name, ws.Name)
	}
	// The calls go to <Prefix>.<tool> and nowhere else: a service that
	// answers under the workers' name must not make the agent publish the
	// model's arguments, with its credentials, on any subject it names.
	subject := c.opts.Prefix + "." + ep.Name
	if ep.Subject != subject {
		return nil, fmt.Errorf("endpoint %q serves subject %q, not %q (the client's Prefix must be the workers'): its calls are not sent there", ep.Name, ep.Subject, subject)
	}
	spec := ws.spec()
	if out := ep.Metadata[MetaOutputSchema]; out != "" {
		spec.OutputSchema = json.RawMessage(out)
	}
	t, err := toolkit.NewRawTool(spec, json.RawMessage(ep.Metadata[MetaSchema]), func(ctx context.Context, args json.RawMessage) ([]toolkit.Part, error) {
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

// LostError is a call whose worker stopped answering.
type LostError struct {
	Worker string // "" when no worker took the call
	Tool   string
	After  time.Duration
	// Conn, when not "", is why the silence may be the agent's own: its
	// NATS connection was closed or away ("closed", "reconnecting") when
	// the call was given up.
	Conn string
}

// Error says which worker went silent, for how long, and that the call may
// have done its work.
func (e *LostError) Error() string {
	if e.Conn != "" {
		who := "a worker (none had said it took the call)"
		if e.Worker != "" {
			who = "worker " + e.Worker
		}
		return fmt.Sprintf("remote: no word on the call of %q for %v: this agent's own NATS connection is %s, so nothing from %s could reach it; the call may or may not have done its work",
			e.Tool, e.After, e.Conn, who)
	}
	if e.Worker == "" {
		return fmt.Sprintf("remote: no worker took the call of %q within %v (it was lost, or its worker died)", e.Tool, e.After)
	}
	return fmt.Sprintf("remote: worker %s stopped answering the call of %q (no heartbeat for %v): it died, hangs or lost its connection; the call may or may not have done its work",
		e.Worker, e.Tool, e.After)
}

// Unwrap makes errors.Is(err, ErrWorkerLost) true.
func (e *LostError) Unwrap() error { return ErrWorkerLost }

// Temporary tells the Retry interceptor that another attempt may work: it
// retries it for tools that are read-only, idempotent or silent about it,
// never for a tool that says it is not idempotent.
func (e *LostError) Temporary() bool { return true }

// connTrouble says what is wrong with the agent's own connection, or "".
func connTrouble(nc *nats.Conn) string {
	switch nc.Status() {
	case nats.CONNECTED, nats.DRAINING_SUBS, nats.DRAINING_PUBS:
		return ""
	case nats.CLOSED:
		return "closed"
	default:
		return strings.ToLower(nc.Status().String())
	}
}

// call sends one call and follows it to its end.
func (c *Client) call(ctx context.Context, tool, subject string, args json.RawMessage) ([]toolkit.Part, error) {
	info, ok := toolkit.CallInfoFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("remote: tool %q runs only as a call of a toolkit", tool)
	}
	em := stream.From(ctx)
	inbox, ch, done, err := c.open()
	if errors.Is(err, ErrClientClosed) {
		return nil, fmt.Errorf("remote: calling %q: %w", tool, err)
	}
	if err != nil {
		return nil, interceptors.Transient(fmt.Errorf("remote: calling %q: %w", tool, err))
	}
	defer done()
	for attempt := 0; ; attempt++ {
		m := nats.NewMsg(subject)
		m.Reply = inbox
		m.Data = args
		setID(m.Header, HeaderSession, HeaderSessionQuoted, info.Session)
		setID(m.Header, HeaderCall, HeaderCallQuoted, info.CallID)
		if info.Agent != "" {
			m.Header.Set(HeaderAgent, info.Agent)
		}
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			if left <= 0 {
				return nil, context.DeadlineExceeded
			}
			m.Header.Set(HeaderTimeout, msHeader(left))
		}
		m.Header.Set(HeaderHeartbeat, msHeader(c.opts.Heartbeat))
		c.opts.Inject(ctx, m.Header)
		if err := c.nc.PublishMsg(m); err != nil {
			return nil, interceptors.Transient(fmt.Errorf("remote: sending the call of %q: %w", tool, err))
		}
		f := follower{c: c, tool: tool, inbox: inbox, ch: ch, em: em, next: 1}
		parts, err := f.follow(ctx)
		if errors.Is(err, ErrBusy) && attempt < c.opts.BusyRetries {
			wait := busyBackoff(attempt) + rand.N(5*time.Millisecond)
			if c.onBackoff != nil {
				c.onBackoff()
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-c.r.closed:
				// Nothing is sent once the client is closed: no one would
				// follow the call.
				return nil, fmt.Errorf("remote: the call of %q, refused as busy, was not sent again: %w", tool, ErrClientClosed)
			case <-time.After(wait):
			}
			continue
		}
		if errors.Is(err, ErrBusy) {
			err = fmt.Errorf("%w (tried %d times)", err, attempt+1)
		}
		return parts, err
	}
}

// maxBusyBackoff bounds the wait before a call refused as busy is sent
// again: it doubles from 5 ms, and stays short however many retries
// ClientOptions.BusyRetries allows.
const maxBusyBackoff = 200 * time.Millisecond

func busyBackoff(attempt int) time.Duration {
	if attempt >= 6 { // 5 ms << 6 = 320 ms; also keeps the shift from overflowing
		return maxBusyBackoff
	}
	return min(time.Duration(5<<attempt)*time.Millisecond, maxBusyBackoff)
}

// follower follows one sent call: its frames, its worker's heartbeats, the
// caller's cancellation.
type follower struct {
	c       *Client
	tool    string
	inbox   string
	ch      *mailbox
	em      *stream.Emitter
	worker  string
	control string
	next    uint64             // the frame number expected next
	others  []string           // other workers that took the same send (told to stop)
	gap     bool               // a frame was lost: the result frame's content is the truth
	relayed events.Reassembler // what reached the engine, to compare with the result

	// A part too large for one message comes in chunks (HeaderChunk): its
	// JSON so far, the index due next, the count, and whether its first
	// chunk started the content over. count is 0 outside a run.
	chunks     []byte
	chunkNext  int
	chunkCount int
	chunkReset bool
}

func (f *follower) follow(ctx context.Context) ([]toolkit.Part, error) {
	lost := f.c.LostAfter()
	timer := time.NewTimer(lost)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, f.cancel()
		case <-timer.C:
			// The time it took to handle the last frame (the agent's engine
			// and its inline observers) is not the worker's silence: a frame
			// that came meanwhile says it is alive.
			m := f.ch.take()
			if m == nil {
				return nil, &LostError{Worker: f.worker, Tool: f.tool, After: lost, Conn: connTrouble(f.c.nc)}
			}
			timer.Reset(lost)
			if done, parts, err := f.frame(m); done {
				return parts, err
			}
		case <-f.c.r.closed:
			return nil, fmt.Errorf("remote: the call of %q: %w (the worker may still run it)", f.tool, ErrClientClosed)
		case <-f.ch.ready:
			m := f.ch.take()
			if m == nil {
				continue
			}
			timer.Reset(lost)
			if done, parts, err := f.frame(m); done {
				return parts, err
			}
		}
	}
}

// frame handles one message; done says the call is over.
func (f *follower) frame(m *nats.Msg) (done bool, parts []toolkit.Part, err error) {
	if m.Header.Get(HeaderFrame) == frameCancel {
		return // an answer to a cancellation, which only cancel waits for
	}
	if m.Header.Get("Status") == "503" && len(m.Data) == 0 {
		return true, nil, interceptors.Transient(fmt.Errorf("remote: %w %q (no responders on %s)", ErrNoWorkers, f.tool, m.Subject))
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		desc := m.Header.Get(micro.ErrorHeader)
		if code == codeBusy {
			return true, nil, interceptors.Transient(fmt.Errorf("remote: %w: %s", ErrBusy, desc))
		}
		return true, nil, fmt.Errorf("remote: worker %s refused the call (%s): %s", m.Header.Get(HeaderWorker), code, desc)
	}
	if m.Header.Get(HeaderFrame) == "" {
		// Not a frame: a JetStream acknowledgement when a stream keeps
		// the call's subject, say. It says nothing about the call.
		return
	}
	seq := frameSeq(m)
	if seq != f.next {
		f.gap = true
	}
	f.next = seq + 1
	switch m.Header.Get(HeaderFrame) {
	case frameAccept:
		w, ctl := m.Header.Get(HeaderWorker), m.Header.Get(HeaderControl)
		bad := checkControl(f.c.opts.Prefix, w, ctl)
		if f.worker == "" {
			if bad != nil {
				return true, nil, f.foreignControl(w, bad)
			}
			f.worker, f.control = w, ctl
			return
		}
		if w == f.worker {
			return // the same accept again
		}
		// A second worker took the same send: two queue groups serve the
		// tool. The call goes on with the first; the second is told to stop
		// at once, and the result says it was taken twice. Their frames
		// are mixed now: the first one's result frame is the content. A
		// second responder that names a foreign control subject is not
		// told (its frames are ignored like any second worker's).
		f.gap = true
		f.others = append(f.others, w)
		if bad == nil {
			_ = f.c.nc.PublishMsg(&nats.Msg{Subject: ctl, Data: []byte(f.inbox)})
		}
	case frameProgress:
		if !f.em.Listening() {
			return
		}
		var p wireProgress
		if json.Unmarshal(m.Data, &p) != nil {
			return
		}
		frac := -1.0
		if p.Fraction != nil {
			frac = *p.Fraction
		}
		if len(p.Data) > 0 {
			f.em.Report(p.Message, frac, p.Data)
		} else {
			f.em.Report(p.Message, frac, nil)
		}
	case frameDelta:
		if f.gap {
			return
		}
		data, reset := m.Data, m.Header.Get(HeaderReset) != ""
		if c := m.Header.Get(HeaderChunk); c != "" || f.chunkCount > 0 {
			whole, ok := f.chunk(c, data, reset)
			if !ok {
				f.gap = true // a chunk missing or out of place
				return
			}
			if whole == nil {
				return // more chunks to come
			}
			data, reset = whole, f.chunkReset
			f.chunks, f.chunkNext, f.chunkCount, f.chunkReset = nil, 0, 0, false
		}
		var p events.Part
		if json.Unmarshal(data, &p) != nil {
			f.gap = true
			return
		}
		if reset {
			if f.em.Reset() == nil {
				f.relayed = events.Reassembler{}
			}
		}
		if f.em.Part(p) == nil {
			// A Reassembler adds text deltas in linear time, where
			// AppendPart copies the text so far for each.
			f.relayed.Add(&events.Event{Type: events.TypeDelta, Delta: &p})
		}
	case frameResult:
		if w := m.Header.Get(HeaderWorker); w != "" && f.worker != "" && w != f.worker {
			return // the result of a second worker that took the call (stopped)
		}
		var r wireResult
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return true, nil, fmt.Errorf("remote: worker %s sent a result that does not decode: %v", f.worker, err)
		}
		parts, err := f.settle(&r)
		return true, parts, err
	}
	return
}

// chunk takes one chunk of a part: the part's JSON once its last chunk
// came, nil before; ok is false when the chunk is not the one due (or a
// plain delta came in the middle of a run).
func (f *follower) chunk(h string, data []byte, reset bool) (whole []byte, ok bool) {
	i, n, ok := parseChunk(h)
	if !ok {
		return nil, false
	}
	if f.chunkCount == 0 {
		if i != 0 {
			return nil, false
		}
		f.chunkCount, f.chunkReset = n, reset
	} else if i != f.chunkNext || n != f.chunkCount {
		return nil, false
	}
	f.chunks = append(f.chunks, data...)
	f.chunkNext++
	if f.chunkNext < f.chunkCount {
		return nil, true
	}
	return f.chunks, true
}

// settle makes the call's content the worker's: what was relayed stands
// when it is that; otherwise (a lost frame) the content starts over with the
// result's.
func (f *follower) settle(r *wireResult) ([]toolkit.Part, error) {
	var rerr error
	if r.State != events.StateSuccess {
		rerr = &WorkerError{Worker: f.worker, Tool: f.tool, State: r.State, Message: r.Error}
		if r.Transient {
			rerr = interceptors.Transient(rerr) // the tool vouched for it on the worker
		}
	}
	relayed := f.relayed.Content()
	want := r.Content
	if r.Omitted {
		if len(f.others) > 0 {
			return nil, fmt.Errorf("remote: worker %s's result of %q was larger than one NATS message, and workers %s took the call too: their frames mixed, the content cannot be put together (the tool's workers are in different queue groups)", f.worker, f.tool, strings.Join(f.others, ", "))
		}
		if f.gap || f.chunkCount > 0 {
			return nil, fmt.Errorf("remote: worker %s's result of %q was larger than one NATS message and some of its pieces were lost", f.worker, f.tool)
		}
		want = relayed
	} else if rerr != nil {
		want = withoutErrorLine(want, r.Error)
	}
	var out []toolkit.Part
	if f.em == nil {
		out = want // no engine to stream to: return the content
	} else if !events.EqualContent(relayed, want) {
		if err := f.em.Reset(); err != nil {
			return nil, err
		}
		for _, p := range want {
			if err := f.em.Part(p); err != nil {
				return nil, err
			}
		}
	}
	for k, v := range r.Meta {
		f.em.SetMeta(k, v)
	}
	if r.MetaOmitted {
		f.em.SetMeta(MetaOmitted, true)
	}
	if f.worker != "" {
		f.em.SetMeta(MetaWorker, f.worker)
	}
	if len(f.others) > 0 {
		f.em.SetMeta(MetaAlsoTakenBy, f.others)
	}
	return out, rerr
}

// withoutErrorLine takes the engine's "Error: <msg>" line off the end of a
// failed call's content: the caller's engine adds it again.
func withoutErrorLine(content []events.Part, msg string) []events.Part {
	if len(content) == 0 || msg == "" {
		return content
	}
	last := content[len(content)-1]
	line := "Error: " + msg
	if last.Type != events.PartText || !strings.HasSuffix(last.Text, line) {
		return content
	}
	out := slices.Clone(content[:len(content)-1])
	if rest := strings.TrimSuffix(last.Text, line); rest != "" {
		out = append(out, events.Text(rest))
	}
	return out
}

// cancel tells the worker to stop the call and waits a little for it to
// confirm, so that the handler on the worker has stopped when the call's
// result says so. It stops waiting at once when the worker refuses the
// cancellation or says it does not run the call.
func (f *follower) cancel() error {
	f.sendCancel()
	wait := time.NewTimer(f.c.opts.CancelWait)
	defer wait.Stop()
	taken := false // the worker answered that it is stopping the call
	for {
		select {
		case <-f.c.r.closed:
			return ErrClientClosed
		case <-wait.C:
			switch {
			case f.worker == "":
				return errors.New("no worker had taken the call yet")
			case taken:
				return fmt.Errorf("worker %s is stopping the call, but its handler had not returned within %v", f.worker, f.c.opts.CancelWait)
			}
			return fmt.Errorf("worker %s did not confirm within %v", f.worker, f.c.opts.CancelWait)
		case <-f.ch.ready:
			m := f.ch.take()
			if m == nil {
				continue
			}
			code, desc := m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader)
			switch m.Header.Get(HeaderFrame) {
			case frameAccept:
				w, ctl := m.Header.Get(HeaderWorker), m.Header.Get(HeaderControl)
				bad := checkControl(f.c.opts.Prefix, w, ctl)
				if f.worker != "" {
					if w != f.worker && bad == nil {
						// A second worker took the call: it stops too.
						_ = f.c.nc.PublishMsg(&nats.Msg{Subject: ctl, Data: []byte(f.inbox)})
					}
					continue
				}
				if bad != nil {
					return f.foreignControl(w, bad)
				}
				f.worker, f.control = w, ctl
				f.sendCancel()
			case frameResult:
				// A result that was on its way when the caller cancelled says
				// the call ended on its own: the cancellation stopped nothing.
				var r wireResult
				if json.Unmarshal(m.Data, &r) == nil && r.State != "" &&
					r.State != events.StateInterrupted && r.State != events.StateTimeout {
					return fmt.Errorf("worker %s had finished the call (%s) before the cancellation reached it", f.worker, r.State)
				}
				return fmt.Errorf("worker %s stopped the call", f.worker)
			case frameCancel:
				if code == "" {
					taken = true
					continue
				}
				return fmt.Errorf("worker %s refused the cancellation (%s): %s", m.Header.Get(HeaderWorker), code, desc)
			case "":
				if m.Header.Get("Status") == "503" && len(m.Data) == 0 {
					return errors.New("no worker had taken the call")
				}
				if code != "" {
					return fmt.Errorf("worker %s refused the call (%s): %s", m.Header.Get(HeaderWorker), code, desc)
				}
			}
		}
	}
}

// foreignControl is the error of a call whose first accept frame breaks the
// protocol's rule for the control subject. The call fails at once rather
// than going on without a way to stop it: the client cannot keep its
// promise that a cancellation reaches the worker's handler, and a responder
// that breaks the protocol in its first frame is not one to trust with the
// call's result. Its own deadline bound (the request's timeout header) is
// what stops it.
func (f *follower) foreignControl(worker string, why error) error {
	return fmt.Errorf("remote: the worker %q that took the call of %q breaks the protocol: %w (the worker may still run the call; it was told nothing)", worker, f.tool, why)
}

// sendCancel sends the cancellation to the worker that took the call, if
// one did, with the call's inbox as the reply subject for its answer.
func (f *follower) sendCancel() {
	if f.control == "" {
		return
	}
	_ = f.c.nc.PublishMsg(&nats.Msg{Subject: f.control, Reply: f.inbox, Data: []byte(f.inbox)})
}
