package kvlead

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Keys returns the keys that match filter (a key with NATS wildcards, such
// as "c.abc.>") and have a message in the stream, as its leader knows them:
// deleted and purged keys too (their marker is a message), which a Get
// then reports as not found.
func (b *Bucket) Keys(ctx context.Context, filter string) ([]string, error) {
	keys, _, err := try(ctx, b.policy, b.denied(b.api+"STREAM.INFO."+b.stream), func(ctx context.Context) ([]string, error) { return b.keysOnce(ctx, filter) })
	return keys, err
}

// keysOnce asks the leader for the stream's subjects that match, page by
// page.
func (b *Bucket) keysOnce(ctx context.Context, filter string) ([]string, error) {
	var keys []string
	for offset := 0; ; {
		req, _ := json.Marshal(struct {
			Offset         int    `json:"offset"`
			SubjectsFilter string `json:"subjects_filter"`
		}{offset, b.subject + filter})
		resp, err := b.request(ctx, &nats.Msg{Subject: b.api + "STREAM.INFO." + b.stream, Data: req})
		if err != nil {
			return nil, err
		}
		var r struct {
			Error *jetstream.APIError `json:"error"`
			State struct {
				Subjects map[string]uint64 `json:"subjects"`
			} `json:"state"`
			Cluster *struct {
				Leader string `json:"leader"`
			} `json:"cluster"`
			Total  int `json:"total"`
			Offset int `json:"offset"`
		}
		if err := json.Unmarshal(resp.Data, &r); err != nil {
			return nil, fmt.Errorf("bucket %s: an answer that is not JetStream's: %w", b.name, err)
		}
		switch {
		case r.Error != nil:
			return nil, b.apiError(r.Error)
		case r.Cluster != nil && r.Cluster.Leader == "":
			return nil, errNoLeader // a member's view, maybe behind
		}
		for s := range r.State.Subjects {
			keys = append(keys, strings.TrimPrefix(s, b.subject))
		}
		offset += len(r.State.Subjects)
		if len(r.State.Subjects) == 0 || offset >= r.Total {
			return keys, nil
		}
	}
}
