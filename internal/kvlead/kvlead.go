// Package kvlead reads a JetStream key-value bucket's entries from the
// leader of its stream.
//
// jetstream.KeyValue.Get is a direct get: any server that keeps a replica of
// the bucket may answer, with what it has applied so far. A write is
// acknowledged once a majority stored it, so a replica can answer with the
// value from before a write its caller already saw succeed: on a cluster, a
// session's tool groups went back a step after a node failure. The packages
// whose reads must see every acknowledged write (their own, and the
// compare-and-set loops that decide the next one) read from the leader
// with a Reader instead. A leader read costs one request, as a direct get
// does; it only cannot be answered by a replica nearer the caller.
package kvlead

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reader reads one bucket's entries from its stream's leader.
type Reader struct {
	js      nats.JetStreamContext // the API whose message gets are not direct unless asked
	stream  string                // KV_<bucket>
	subject string                // $KV.<bucket>.
}

// New returns a Reader of the bucket through js's connection, API prefix
// and domain.
func New(js jetstream.JetStream, bucket string) (*Reader, error) {
	var opts []nats.JSOpt
	switch o := js.Options(); {
	case o.Domain != "":
		opts = append(opts, nats.Domain(o.Domain))
	case o.APIPrefix != "":
		opts = append(opts, nats.APIPrefix(o.APIPrefix))
	}
	legacy, err := js.Conn().JetStream(opts...)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	return &Reader{js: legacy, stream: "KV_" + bucket, subject: "$KV." + bucket + "."}, nil
}

// Get returns key's value and its revision. A key never written, deleted or
// purged is jetstream.ErrKeyNotFound.
func (r *Reader) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	m, err := r.js.GetLastMsg(r.stream, r.subject+key, nats.Context(ctx))
	if errors.Is(err, nats.ErrMsgNotFound) {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	return m.Data, m.Sequence, nil
}
