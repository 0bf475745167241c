package kvlead

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// ErrMaybeStored is the cause of a write that gave up (its context ended,
// or the bound passed) while a request of it went unanswered: the stream
// may have applied it.
var ErrMaybeStored = errors.New("the write may have been stored: a request of it went unanswered")

// Create stores value under key if the key has no value (never written,
// deleted or purged) and returns its revision; a key that has one is
// jetstream.ErrKeyExists.
func (b *Bucket) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := b.write(ctx, key, value, "", new(uint64))
	var c *conflict
	if !errors.As(err, &c) {
		return rev, err
	}
	if c.last != nil && c.last.deleted() {
		// Created over the marker, as jetstream.KeyValue.Create does.
		if rev, err = b.write(ctx, key, value, "", &c.last.seq); !errors.As(err, &c) {
			return rev, err
		}
	}
	return 0, fmt.Errorf("%w: %w", c.err, jetstream.ErrKeyExists)
}

// Update stores value under key if revision is the key's last; otherwise
// it is jetstream.ErrKeyRevisionMismatch.
func (b *Bucket) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	rev, err := b.write(ctx, key, value, "", &revision)
	var c *conflict
	if errors.As(err, &c) {
		return 0, fmt.Errorf("%w: %w", c.err, jetstream.ErrKeyRevisionMismatch)
	}
	return rev, err
}

// Put stores value under key, whatever the key holds.
func (b *Bucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return b.write(ctx, key, value, "", nil)
}

// Delete deletes key (a delete marker, as jetstream.KeyValue.Delete) if
// revision is its last (0: whatever it is); otherwise it is
// jetstream.ErrKeyRevisionMismatch.
func (b *Bucket) Delete(ctx context.Context, key string, revision uint64) error {
	var expect *uint64
	if revision > 0 {
		expect = &revision
	}
	_, err := b.write(ctx, key, nil, "DEL", expect)
	var c *conflict
	if errors.As(err, &c) {
		return fmt.Errorf("%w: %w", c.err, jetstream.ErrKeyRevisionMismatch)
	}
	return err
}

// newID names a write for the stream's duplicate detection (tests name
// them themselves).
var newID = nuid.Next

// conflict is a write refused because the key's last revision is not the
// one it expected, with that last message (nil: none).
type conflict struct {
	err  error
	last *entry
}

func (c *conflict) Error() string { return c.err.Error() }
func (c *conflict) Unwrap() error { return c.err }

// write publishes one message to the key (op: a KV-Operation, or "" for a
// value), expecting the key's last revision to be *expect when expect is
// not nil, and returns its revision. A refusal because of the revision is
// a *conflict, unless reading back shows this very message as the key's
// last: then it was stored by a request whose answer was lost.
func (b *Bucket) write(ctx context.Context, key string, value []byte, op string, expect *uint64) (uint64, error) {
	id := newID()
	m := &nats.Msg{Subject: b.pub + b.subject + key, Header: nats.Header{}, Data: value}
	m.Header.Set(jetstream.MsgIDHeader, id)
	if op != "" {
		m.Header.Set(kvOperation, op)
	}
	if expect != nil {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(*expect, 10))
	}
	rev, unsure, err := try(ctx, b.policy, b.denied(m.Subject), func(ctx context.Context) (uint64, error) { return b.publishOnce(ctx, key, m) })
	switch {
	case err == nil:
		return rev, nil
	case isWrongLastSequence(err):
		last, lerr := b.last(ctx, key)
		if lerr != nil {
			return 0, fmt.Errorf("%w (and reading the key back to see whether it was this write that moved it on: %w)", err, lerr)
		}
		if last != nil && last.hdr.Get(jetstream.MsgIDHeader) == id {
			return last.seq, nil
		}
		return 0, &conflict{err: err, last: last}
	case unsure:
		return 0, fmt.Errorf("%w: %w", ErrMaybeStored, err)
	}
	return 0, err
}

// publishOnce sends the message once and reads the stream's answer. "No
// responders" means nobody takes the key's messages: the stream has no
// leader yet, or the bucket is gone, which a read tells apart.
func (b *Bucket) publishOnce(ctx context.Context, key string, m *nats.Msg) (uint64, error) {
	resp, err := b.request(ctx, m)
	if errors.Is(err, nats.ErrNoResponders) {
		probe, cancel := context.WithTimeout(ctx, hedge)
		_, perr := b.lastOnce(probe, key)
		cancel()
		if errors.Is(perr, jetstream.ErrBucketNotFound) {
			return 0, perr
		}
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	var ack struct {
		Seq   uint64              `json:"seq"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("bucket %s: an answer that is not JetStream's: %w", b.name, err)
	}
	if ack.Error != nil {
		return 0, b.apiError(ack.Error)
	}
	return ack.Seq, nil
}

// isWrongLastSequence reports a refusal because of the expected revision
// (10071 from a stream with one replica, 10164 from a replicated one).
func isWrongLastSequence(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
