// Package natskv keeps the tool-group state of sessions in a NATS JetStream
// key-value bucket, for agents that run in several processes. It implements
// groups.Store; install it with groups.WithStore.
package natskv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/internal/kvlead"
	"github.com/toolstream/toolstream/internal/kvready"
)

// DefaultBucket is the key-value bucket New uses when given none.
const DefaultBucket = "toolstream_groups"

// Store keeps session state in a NATS JetStream key-value bucket: every
// process sees the same state, and concurrent updates use the bucket's
// revisions (optimistic concurrency) so that none is lost. Reads and
// writes go to the leader of the bucket's stream, and on through a leader
// election (see WithElectionWait).
type Store struct {
	b *kvlead.Bucket
}

// ErrMaybeStored is the cause of an Update that gave up (its context
// ended, or WithElectionWait passed) while its write went unanswered: the
// bucket may have stored the new state. Load tells.
var ErrMaybeStored = kvlead.ErrMaybeStored

// Option configures New.
type Option func(*config)

type config struct {
	kv   jetstream.KeyValueConfig
	wait time.Duration
}

// WithReplicas makes a JetStream cluster keep the bucket on n servers (1 to
// 5; default 1): with 3, the state survives the loss of one server. Given
// to New for a bucket that exists, it changes the bucket's replicas (and
// nothing else).
func WithReplicas(n int) Option {
	return func(c *config) { c.kv.Replicas = n }
}

// DefaultElectionWait is how long one read or write of the bucket goes on,
// unless WithElectionWait says otherwise, while the bucket does not answer
// it: a crashed leader's peers elect another within about 10 s with the
// NATS server's defaults, and 30 s leaves room for a second round.
const DefaultElectionWait = kvlead.DefaultWait

// WithElectionWait bounds how long one read or write of the bucket (in
// Load, and each of Update's) goes on while the bucket does not answer it:
// its stream elects a new leader, or an answer was lost (0 or less:
// DefaultElectionWait). The caller's context ends it too. Each read or
// write is sent again until answered, so it goes on within about 250 ms of
// the stream having a leader again. Keep d under the bucket's duplicate
// window (2 minutes, or its TTL if shorter): within it, a write sent again
// is never stored twice.
func WithElectionWait(d time.Duration) Option { return func(c *config) { c.wait = d } }

// New opens a key-value bucket for group state, creating it if needed. An
// empty bucket name means DefaultBucket. A bucket that exists is used as it
// is (its replicas, history, TTL, ...), so that a process started with other
// options, or none, does not reconfigure the bucket the others use: only
// WithReplicas, given, changes its replicas.
func New(ctx context.Context, js jetstream.JetStream, bucket string, opts ...Option) (*Store, error) {
	if js == nil {
		return nil, errNoJetStream
	}
	if bucket == "" {
		bucket = DefaultBucket
	}
	cfg := config{kv: jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "toolstream: active tool groups per session",
		History:     1,
	}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.wait <= 0 {
		cfg.wait = DefaultElectionWait
	}
	kv, err := kvlead.Open(ctx, cfg.wait, func(ctx context.Context) (jetstream.KeyValue, error) { return open(ctx, js, cfg.kv) })
	if err != nil {
		return nil, fmt.Errorf("natskv: key-value bucket %s: %w", bucket, err)
	}
	if err := kvready.Wait(ctx, kv); err != nil {
		return nil, fmt.Errorf("natskv: key-value bucket %s: %w", bucket, err)
	}
	return &Store{b: kvlead.New(js, bucket, cfg.wait)}, nil
}

// open opens the bucket of cfg, creating it with cfg when it does not
// exist; of an existing bucket it changes only the replicas, and only when
// cfg names them.
func open(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) { // another process made it meanwhile
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil || cfg.Replicas <= 0 {
		return kv, err
	}
	stream, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, err
	}
	sc := stream.CachedInfo().Config
	if sc.Replicas == cfg.Replicas {
		return kv, nil
	}
	sc.Replicas = cfg.Replicas
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		return nil, fmt.Errorf("setting %d replicas: %w", cfg.Replicas, err)
	}
	return kv, nil
}

// key turns a session id into a valid key: keys allow few characters, so
// every id is base64url-encoded (it never contains "~", unlike subject
// tokens). The id must be one a toolkit accepts (events.CheckSessionID): a
// longer one would make a subject longer than the server's control line
// limit, and the server closes the connection of a client that sends one.
func key(session string) (string, error) {
	if err := events.CheckSessionID(session); err != nil {
		return "", fmt.Errorf("natskv: session id %s: %w", shortQuote(session), err)
	}
	return "s_" + base64.RawURLEncoding.EncodeToString([]byte(session)), nil
}

// shortQuote quotes a session id for an error, only its start when it is
// longer than any valid one.
func shortQuote(s string) string {
	if len(s) <= events.MaxSessionIDLen {
		return strconv.Quote(s)
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

var _ groups.Store = (*Store)(nil)

// Load implements groups.Store. Session ids are those a toolkit accepts
// (events.CheckSessionID); others are an error, in Update too.
func (s *Store) Load(ctx context.Context, session string) (map[string]bool, error) {
	k, err := key(session)
	if err != nil {
		return nil, err
	}
	value, _, err := s.b.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("natskv: loading session %q: %w", session, err)
	}
	return s.decodeState(session, k, value)
}

// maxConflicts bounds retries under contention; reaching it means something
// else is wrong.
const maxConflicts = 1000

// Update implements groups.Store with compare-and-set on the key's revision.
func (s *Store) Update(ctx context.Context, session string, fn func(map[string]bool) (map[string]bool, error)) (map[string]bool, error) {
	k, err := key(session)
	if err != nil {
		return nil, err
	}
	for range maxConflicts {
		var cur map[string]bool
		var rev uint64
		value, r, err := s.b.Get(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, fmt.Errorf("natskv: loading session %q: %w", session, err)
		default:
			if cur, err = s.decodeState(session, k, value); err != nil {
				return nil, err
			}
			rev = r
		}
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(next)
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			_, err = s.b.Create(ctx, k, data)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // another process created it first: start over
			}
		} else {
			_, err = s.b.Update(ctx, k, data, rev)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue // another process changed it: start over
			}
		}
		if err != nil {
			return nil, fmt.Errorf("natskv: storing session %q: %w", session, err)
		}
		return next, nil
	}
	return nil, fmt.Errorf("natskv: session %q: %d conflicting updates in a row", session, maxConflicts)
}

// decodeState decodes the state stored under key k for a session. A value
// that is not one (written by hand, or by something else) is an error that
// says where it is and how to start over: nothing overwrites it, so that
// nothing is lost silently.
func (s *Store) decodeState(session, k string, data []byte) (map[string]bool, error) {
	var m map[string]bool
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("natskv: session %s: the state stored under key %q of bucket %q is not valid (%w); "+
			"delete the key to start the session from its groups' defaults", shortQuote(session), k, s.b.Name(), err)
	}
	return m, nil
}

// errNoJetStream is New's error for a nil JetStream context, which it would
// otherwise take to the first request and panic there.
var errNoJetStream = errors.New("natskv: no JetStream context (nil): natsbus.Bus.JetStream is nil unless the bus was opened WithDurable; pass jetstream.New(bus.Conn()) or open the bus durable")
