package natsdeploy_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

// BenchmarkResponsePermissions measures what the server's tracking of
// allow_responses costs (worker-responses.conf) beside the inbox-prefix
// alternative (worker-inbox-prefix.conf), side by side: the server keeps an
// entry per request it delivers to the worker, for "expires" (an hour), and
// walks all of them every 4,096 new ones or every second. Each sub-benchmark
// first has the worker take live requests (the entries an hour of calls at
// some rate leaves), reporting the server's heap per entry, then times b.N
// more: ns per request delivered (the agent's publish to the worker's
// receipt, the walk included).
//
//	go test -run '^$' -bench ResponsePermissions -benchtime 20000x ./deploy/nats/
func BenchmarkResponsePermissions(b *testing.B) {
	for _, live := range []int{10_000, 100_000, 1_000_000} {
		for _, tc := range []struct{ name, file, inbox string }{
			{"allow_responses", "worker-responses.conf", "_INBOX"},
			{"inbox_prefix", "worker-inbox-prefix.conf", "_INBOX_tools"},
		} {
			b.Run(fmt.Sprintf("%s/live=%d", tc.name, live), func(b *testing.B) {
				d := deploytest.Start(b, withWorkerFile(b, tc.file))
				agentConn := connectB(b, d, deploytest.Agent)
				workerConn := connectB(b, d, deploytest.Worker)
				var got atomic.Int64
				done := make(chan struct{}, 1)
				target := atomic.Int64{}
				if _, err := workerConn.QueueSubscribe("toolstream._tools.count_lines", "toolstream", func(*nats.Msg) {
					if got.Add(1) == target.Load() {
						done <- struct{}{}
					}
				}); err != nil {
					b.Fatal(err)
				}
				if err := workerConn.Flush(); err != nil {
					b.Fatal(err)
				}
				prefix := tc.inbox + "." + nuid.Next() + "."
				send := func(n int) {
					target.Add(int64(n))
					var token [16]byte
					for i := range n {
						_, _ = rand.Read(token[:])
						if err := agentConn.PublishRequest("toolstream._tools.count_lines", prefix+base64.RawURLEncoding.EncodeToString(token[:]), nil); err != nil {
							b.Fatal(err)
						}
						if i%1024 == 1023 {
							if err := agentConn.Flush(); err != nil {
								b.Fatal(err)
							}
						}
					}
					if err := agentConn.Flush(); err != nil {
						b.Fatal(err)
					}
					select {
					case <-done:
					case <-time.After(5 * time.Minute):
						b.Fatalf("the worker got %d of %d requests", got.Load(), target.Load())
					}
				}

				before := heap()
				send(live)
				perEntry := float64(heap()-before) / float64(live)

				b.ResetTimer()
				send(b.N)
				b.StopTimer()
				b.ReportMetric(perEntry, "heapB/entry") // after ResetTimer, which clears metrics
			})
		}
	}
}

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func connectB(b *testing.B, d *deploytest.Server, p deploytest.Party) *nats.Conn {
	nc, err := nats.Connect(d.URL(), d.Options(p)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}
