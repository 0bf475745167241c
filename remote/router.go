package remote

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/internal/wire"
)

// router hands the frames of the calls in flight to their followers. The
// client has one wildcard subscription for all its calls, made on the first
// call, rather than one per call: a subscription made and dropped per call
// would make every server of a cluster learn and forget an inbox each time.
//
// Each send gets an inbox of its own under the subscription's prefix, whose
// last token is 128 bits from crypto/rand: a worker that served one call
// of the client knows the prefix, and cannot tell any later inbox from it
// (nats.go's NUIDs follow a sequence with a small random step).
type router struct {
	once   sync.Once
	err    error
	sub    *nats.Subscription
	prefix string        // the inboxes' common prefix, ending in "."
	closed chan struct{} // closed by Close

	mu    sync.Mutex
	calls map[string]*mailbox // by inbox
	shut  bool
	// epoch counts the connection's reconnections: a call that heard
	// nothing since one gives its worker the time to answer the resync.
	epoch uint64
	// routed counts the frames that reached a call in flight: while it
	// moves, the workers are talking, and a send none has taken yet waits
	// in a busy worker's backlog rather than being lost.
	routed atomic.Uint64
}

// open gives a send its inbox and the mailbox its frames arrive in; done
// forgets it.
func (c *Client) open() (inbox string, ch *mailbox, done func(), err error) {
	r := &c.r
	r.once.Do(func() {
		r.prefix = c.nc.NewInbox() + "."
		r.calls = map[string]*mailbox{}
		// The listener first: a reconnection between the subscription and
		// it would go unnoticed.
		status := c.nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
		r.sub, r.err = c.nc.Subscribe(r.prefix+"*", r.route)
		if r.err != nil {
			c.nc.RemoveStatusListener(status)
			return
		}
		go c.watch(status)
	})
	if r.err != nil {
		return "", nil, nil, r.err
	}
	var token [16]byte
	_, _ = rand.Read(token[:]) // never fails (crypto/rand's contract since Go 1.24)
	inbox = r.prefix + base64.RawURLEncoding.EncodeToString(token[:])
	ch = &mailbox{ready: make(chan struct{}, 1)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return "", nil, nil, ErrClientClosed
	}
	ch.epoch = r.epoch
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
		return // a call that ended: a late heartbeat, a result sent again
	}
	r.routed.Add(1)
	ch.put(m)
}

// watch follows the connection's reconnections until the client or the
// connection is closed: after each, it asks the workers for what the calls
// in flight may have missed while the client was away (ControlResync).
func (c *Client) watch(status chan nats.Status) {
	defer c.nc.RemoveStatusListener(status)
	for {
		select {
		case <-c.r.closed:
			return
		case s, ok := <-status:
			if !ok || s == nats.CLOSED {
				return
			}
			c.resync()
		}
	}
}

// resync names every call in flight to the workers, in as few messages as
// fit, and starts a new epoch so that their followers wait for the answers.
func (c *Client) resync() {
	r := &c.r
	r.mu.Lock()
	r.epoch++
	keys := make([]string, 0, len(r.calls))
	for inbox := range r.calls {
		keys = append(keys, wire.CallKey(inbox))
	}
	r.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	limit := frameLimit(c.nc)
	for len(keys) > 0 {
		n := min(len(keys), max(limit/(len(keys[0])+1), 1))
		c.sendControl(wire.ControlResync, "", strings.Join(keys[:n], "\n"))
		c.stats.resyncs.Add(1)
		keys = keys[n:]
	}
}

// sendControl sends a control message to the service's workers: to the
// one named, or to all.
func (c *Client) sendControl(kind, worker, body string) {
	var h nats.Header
	if worker != "" {
		h = nats.Header{wire.HeaderWorker: {worker}}
	}
	_ = c.nc.PublishMsg(&nats.Msg{Subject: c.control + kind, Header: h, Data: []byte(body)})
}

// epochNow returns the number of reconnections so far.
func (r *router) epochNow() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epoch
}

// mailbox holds one send's frames until its follower takes them. It is
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
	epoch uint64        // the router's epoch when the follower last heard
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
