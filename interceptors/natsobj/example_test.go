package natsobj_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/interceptors/natsobj"
	"github.com/toolstream/toolstream/toolkit"
)

// A result over the limit goes to a JetStream object store; the model gets
// where it is and its first lines. A tool of one's own reads it back.
func Example() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx) // an embedded NATS server, JetStream on
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	js, _ := jetstream.New(bus.Conn())
	results, err := natsobj.New(ctx, js, "tool_results", natsobj.TTL(24*time.Hour))
	if err != nil {
		panic(err)
	}

	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Use(interceptors.Evict(interceptors.EvictBackend(results), interceptors.EvictLimit(1024)))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "dump"}, func(ctx context.Context, _ struct{}) (string, error) {
		return strings.Repeat("a row of data\n", 1000), nil
	}))
	sess, _ := tk.Session("s")
	r := sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "dump"}})[0]
	first, _, _ := strings.Cut(r.Text(), " It was saved")
	fmt.Println(first)

	loc := r.Meta[interceptors.EvictMetaLocation].(string) // nats-object://tool_results/dump-<hash>.txt
	bucket, name, _ := strings.Cut(strings.TrimPrefix(loc, "nats-object://"), "/")
	store, _ := js.ObjectStore(ctx, bucket)
	data, _ := store.GetBytes(ctx, name)
	fmt.Println(bucket, len(data), "bytes")
	// Output:
	// The result is too large to show here (14000 bytes, 1000 lines).
	// tool_results 14000 bytes
}
