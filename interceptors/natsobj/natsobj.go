// Package natsobj stores results too large for a conversation in a NATS
// JetStream object store bucket: a backend for interceptors.Evict
// (interceptors.EvictBackend). It lives apart so that programs that evict to
// a folder do not link NATS.
package natsobj

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/interceptors"
)

// Option configures [New].
type Option func(*config)

type config struct {
	maxBytes int64
	ttl      time.Duration
}

// defaultMaxBytes is a bucket's size limit unless MaxBytes says otherwise.
const defaultMaxBytes = 256 << 20

// MaxBytes sets the size limit of a bucket the backend creates (default
// 256 MiB, as Evict's folder; 0 or less: no limit).
func MaxBytes(n int64) Option {
	return func(c *config) { c.maxBytes = n }
}

// TTL sets how long a bucket the backend creates keeps each object (default:
// until space is needed).
func TTL(d time.Duration) Option {
	return func(c *config) { c.ttl = max(d, 0) }
}

// New returns an interceptors.Backend that keeps results in a JetStream
// object store bucket, creating the bucket with the options' size limit and
// TTL if it does not exist (an existing bucket is used as it is). Locations
// read "nats-object://<bucket>/<name>".
//
// JetStream refuses writes to a full bucket rather than dropping old data,
// so before each write the backend removes the oldest objects until the new
// one fits under the bucket's size limit. An object stored in the last 10
// minutes is never removed that way: its reference may have just gone to
// the model (another call of the same batch), which reads it later; when
// only such objects could make room, the new result is refused with an
// error that says so (Evict then truncates it). Give it a bucket of its
// own.
func New(ctx context.Context, js jetstream.JetStream, bucket string, opts ...Option) (interceptors.Backend, error) {
	if js == nil {
		return nil, errNoJetStream
	}
	cfg := config{maxBytes: defaultMaxBytes}
	for _, o := range opts {
		o(&cfg)
	}
	store, err := js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		store, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      bucket,
			Description: "toolstream: tool results too large for the conversation",
			MaxBytes:    cfg.maxBytes,
			TTL:         cfg.ttl,
		})
		if errors.Is(err, jetstream.ErrBucketExists) { // created meanwhile by someone else
			store, err = js.ObjectStore(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("object store %q: %w", bucket, err)
	}
	return &objects{js: js, os: store, bucket: bucket}, nil
}

// hold is how long a stored result is safe from the purge that makes room.
var hold = 10 * time.Minute

type objects struct {
	js     jetstream.JetStream
	os     jetstream.ObjectStore
	bucket string
	mu     sync.Mutex // one write and clean-up at a time, so each sees the others' objects
}

func (b *objects) Put(ctx context.Context, name string, data []byte) (string, error) {
	if !interceptors.ValidResultName(name) {
		return "", fmt.Errorf("invalid result name %q", name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.makeRoom(ctx, name, objectSize(len(data))); err != nil {
		return "", err
	}
	if _, err := b.os.PutBytes(ctx, name, data); err != nil {
		return "", fmt.Errorf("object store %q: %w", b.bucket, err)
	}
	return "nats-object://" + b.bucket + "/" + name, nil
}

// objectSize estimates what an object of n bytes takes in the stream:
// its chunks of 128 KiB with their subjects and headers, and its metadata.
func objectSize(n int) int64 {
	return int64(n) + 512 + 128*int64(n/(128<<10)+1)
}

// makeRoom removes the oldest objects (never name) until need more bytes
// fit under the bucket's limit.
func (b *objects) makeRoom(ctx context.Context, name string, need int64) error {
	st, err := b.os.Status(ctx)
	if err != nil {
		return fmt.Errorf("object store %q: %w", b.bucket, err)
	}
	bs, ok := st.(*jetstream.ObjectBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return nil
	}
	limit := bs.StreamInfo().Config.MaxBytes
	if limit <= 0 {
		return nil
	}
	if need > limit {
		return fmt.Errorf("the result (about %d bytes stored) is larger than bucket %q's limit of %d bytes", need, b.bucket, limit)
	}
	used := int64(st.Size())
	if used+need <= limit {
		return nil
	}
	infos, err := b.os.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return fmt.Errorf("object store %q: %w", b.bucket, err)
	}
	slices.SortFunc(infos, func(x, y *jetstream.ObjectInfo) int {
		return cmp.Or(x.ModTime.Compare(y.ModTime), cmp.Compare(x.Name, y.Name))
	})
	// Objects stored within hold are left alone: their references may have
	// just gone to the model (another call of the same batch). If the rest
	// cannot make room, the new result is refused, before anything is
	// purged, and Evict says so in the result.
	now := time.Now()
	held := func(info *jetstream.ObjectInfo) bool { return now.Sub(info.ModTime) < hold }
	var free, heldBytes int64
	var heldCount int
	for _, info := range infos {
		switch {
		case info.Name == name:
		case held(info):
			heldCount++
			heldBytes += objectSize(int(info.Size))
		default:
			free += objectSize(int(info.Size))
		}
	}
	if used-free+need > limit {
		return fmt.Errorf("bucket %q keeps at most %d bytes, and the %d results stored in the last %v, which the model may still read, "+
			"already take about %d bytes: nothing older can make room for this one (about %d bytes; raise the bucket's limit)",
			b.bucket, limit, heldCount, hold, heldBytes, need)
	}
	stream, err := b.js.Stream(ctx, "OBJ_"+b.bucket)
	if err != nil {
		return fmt.Errorf("object store %q: %w", b.bucket, err)
	}
	for _, info := range infos {
		if used+need <= limit {
			break
		}
		if info.Name == name || held(info) {
			continue
		}
		// Purge rather than Delete: a delete writes a marker, which a full
		// bucket refuses; purging needs no room. The subjects are the
		// object store's (NATS ADR-20): chunks by NUID, metadata by name.
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject(fmt.Sprintf("$O.%s.C.%s", b.bucket, info.NUID))); err != nil {
			return fmt.Errorf("object store %q: making room: %w", b.bucket, err)
		}
		meta := fmt.Sprintf("$O.%s.M.%s", b.bucket, base64.URLEncoding.EncodeToString([]byte(info.Name)))
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject(meta)); err != nil {
			return fmt.Errorf("object store %q: making room: %w", b.bucket, err)
		}
		used -= objectSize(int(info.Size))
	}
	return nil
}

// errNoJetStream is New's error for a nil JetStream context, which it would
// otherwise take to the first request and panic there.
var errNoJetStream = errors.New("natsobj: no JetStream context (nil): natsbus.Bus.JetStream is nil unless the bus was opened WithDurable; pass jetstream.New(bus.Conn()) or open the bus durable")
