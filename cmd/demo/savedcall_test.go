package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/durable"
)

// waitSavedCall waits until the demo's durable bucket holds the session's
// conversation with the call callID in it.
func waitSavedCall(addr, session, callID string) error {
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, durable.DefaultBucket)
	if err != nil {
		return fmt.Errorf("the durable bucket: %w", err)
	}
	w, err := kv.Watch(ctx, "conv."+base64.RawURLEncoding.EncodeToString([]byte(session)))
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case e := <-w.Updates():
			if e != nil && strings.Contains(string(e.Value()), `"`+callID+`"`) {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("the conversation with %s was not saved within 30 s", callID)
		}
	}
}
