// Package kvlead reads and writes a JetStream key-value bucket through the
// leader of its stream, and goes on through a leader election.
//
// Reads: jetstream.KeyValue.Get is a direct get, which any server that keeps
// a replica answers with what it has applied so far. A write is
// acknowledged once a majority stored it, so a replica can answer with the
// value from before a write its caller already saw succeed: on a cluster, a
// session's tool groups went back a step after a node failure. A Bucket
// reads from the leader instead (one request, as a direct get; it only
// cannot be answered by a replica nearer the caller).
//
// Elections: when the server that leads the stream dies, its peers notice
// after seconds of missed heartbeats (4 to 9 s with the server's defaults)
// and elect another. Meanwhile a read gets no answer at all and a write "no
// responders", and a request sent to the dead leader just before it died
// never gets its answer. A Bucket sends every request again while it has no
// answer (every 250 ms; an earlier request's late answer still counts) or
// got one that only says "not now", with a short backoff, until an answer
// that is one, the caller's context ends, or the Bucket's bound passes
// (DefaultWait). So a read or write goes on at most about 250 ms after the
// stream has a new leader.
//
// Writes are safe to send again: each carries a message id, which the
// stream remembers (its duplicate window, 2 minutes for a bucket without a
// shorter TTL) and answers again instead of storing the message twice. A
// compare-and-set write that is refused as out of date is read back: if the
// key's last message is this write's, it was applied (by a request whose
// answer was lost) and counts as stored. A write that gives up while one
// of its requests has no answer says it may have been stored
// (ErrMaybeStored) instead of claiming it was not.
package kvlead

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultWait bounds how long one read or write goes on while the bucket
// does not answer it, when New is given no bound: a crashed leader's peers
// elect another within about 10 s with the server's defaults, and 30 s
// leaves room for a second round.
const DefaultWait = 30 * time.Second

// Bucket reads and writes one key-value bucket through its stream's leader.
type Bucket struct {
	nc      *nats.Conn
	api     string // the JetStream API prefix, with its final "."
	pub     string // what precedes a key's subject in a write: "" or the API prefix
	stream  string // KV_<bucket>
	subject string // $KV.<bucket>.
	name    string
	policy  policy
}

// New returns the Bucket through js's connection, API prefix and domain;
// wait bounds each read and write (0 or less: DefaultWait).
func New(js jetstream.JetStream, bucket string, wait time.Duration) *Bucket {
	o := js.Options()
	api := jetstream.DefaultAPIPrefix
	switch {
	case o.Domain != "":
		api = "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		api = o.APIPrefix
		if !strings.HasSuffix(api, ".") {
			api += "."
		}
	}
	pub := ""
	if api != jetstream.DefaultAPIPrefix {
		pub = api // as jetstream.KeyValue sends its writes
	}
	if wait <= 0 {
		wait = DefaultWait
	}
	return &Bucket{nc: js.Conn(), api: api, pub: pub, stream: "KV_" + bucket, subject: "$KV." + bucket + ".", name: bucket,
		policy: policy{name: bucket, wait: wait, hedge: hedge}}
}

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Get returns key's value and its revision. A key never written, deleted or
// purged is jetstream.ErrKeyNotFound; a bucket that does not exist
// jetstream.ErrBucketNotFound.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	m, err := b.last(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if m == nil || m.deleted() {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	return m.data, m.seq, nil
}

// entry is the last message of a key, as the leader keeps it.
type entry struct {
	seq  uint64
	hdr  nats.Header
	data []byte
}

// deleted reports whether the entry is a delete or purge marker.
func (e *entry) deleted() bool {
	op := e.hdr.Get(kvOperation)
	return op == "DEL" || op == "PURGE"
}

const kvOperation = "KV-Operation"

// last returns the key's last message (a delete marker too), or nil when
// it has none.
func (b *Bucket) last(ctx context.Context, key string) (*entry, error) {
	e, _, err := try(ctx, b.policy, b.denied(b.api+"STREAM.MSG.GET."+b.stream), func(ctx context.Context) (*entry, error) { return b.lastOnce(ctx, key) })
	return e, err
}

// lastOnce asks the leader once for the key's last message.
func (b *Bucket) lastOnce(ctx context.Context, key string) (*entry, error) {
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{b.subject + key})
	resp, err := b.request(ctx, &nats.Msg{Subject: b.api + "STREAM.MSG.GET." + b.stream, Data: req})
	if err != nil {
		return nil, err
	}
	var r struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("bucket %s: an answer that is not JetStream's: %w", b.name, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, nil
	case r.Error != nil:
		return nil, b.apiError(r.Error)
	case r.Message == nil:
		return nil, fmt.Errorf("bucket %s: the leader answered without a message", b.name)
	}
	e := &entry{seq: r.Message.Seq, data: r.Message.Data, hdr: nats.Header{}}
	if len(r.Message.Header) > 0 {
		if e.hdr, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return nil, fmt.Errorf("bucket %s: the headers of message %d: %w", b.name, e.seq, err)
		}
	}
	return e, nil
}

// request sends one request.
func (b *Bucket) request(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
	return b.nc.RequestMsgWithContext(ctx, m)
}

// denied returns a check of whether the connection may not publish to
// subject: the server refuses with an asynchronous error, and the request
// goes unanswered. Requests sent again would go unanswered too: the check
// runs when one has waited a while, and ends the read or write.
func (b *Bucket) denied(subject string) func() error {
	return func() error {
		if last := b.nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), `"`+subject+`"`) {
			return fmt.Errorf("bucket %s: %w", b.name, last)
		}
		return nil
	}
}

// apiError wraps an error JetStream answered with; a stream that does not
// exist is also jetstream.ErrBucketNotFound.
func (b *Bucket) apiError(e *jetstream.APIError) error {
	if e.ErrorCode == jetstream.JSErrCodeStreamNotFound {
		return fmt.Errorf("%w: %s: %w", jetstream.ErrBucketNotFound, b.name, e)
	}
	return e
}
