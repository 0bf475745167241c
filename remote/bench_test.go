package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

type hashIn struct {
	N int `json:"n"`
}

// hashTool does a little real work: it hashes n KiB.
func hashTool() *toolkit.Tool {
	return toolkit.MustTool(toolkit.Spec{Name: "hash", ReadOnly: true, ConcurrencySafe: true},
		func(_ context.Context, in hashIn) (string, error) {
			buf := make([]byte, 1024)
			h := sha256.New()
			for range in.N {
				h.Write(buf)
			}
			return fmt.Sprintf("%x", h.Sum(nil)[:8]), nil
		})
}

// tcpConn connects over the loopback listener, as a worker process would.
func tcpConn(b *testing.B, bus *natsbus.Bus) *nats.Conn {
	nc, err := nats.Connect(bus.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}

func benchWorker(b *testing.B, bus *natsbus.Bus) {
	tk := testutil.Kit(b)
	testutil.Add(b, tk, hashTool())
	w, err := remote.Serve(tcpConn(b, bus), tk)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Stop(context.Background()) })
}

func pct(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[int(float64(len(d)-1)*p)].Microseconds())
}

// BenchmarkRemoteOverhead runs one call of a small tool in process and one
// on a worker (over TCP loopback, one embedded server) in turn, and reports
// each one's p50 and p99 in µs and their ratio.
func BenchmarkRemoteOverhead(b *testing.B) {
	bus := natstest.Bus(b, natsbus.WithListen("127.0.0.1:0"))
	benchWorker(b, bus)
	c := remote.NewClient(tcpConn(b, bus))
	ctx := context.Background()
	tools, err := c.Discover(ctx)
	if err != nil || len(tools) != 1 {
		b.Fatal(tools, err)
	}
	agent := testutil.Kit(b)
	testutil.Add(b, agent, tools...)
	local := testutil.Kit(b)
	testutil.Add(b, local, hashTool())
	rs, ls := testutil.Session(b, agent, "s"), testutil.Session(b, local, "s")
	calls := []toolkit.Call{{ID: "c", Name: "hash", Args: []byte(`{"n":1}`)}}
	var remoteT, localT []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if r := ls.Run(ctx, calls)[0]; r.State != events.StateSuccess {
			b.Fatal(r.Text())
		}
		t1 := time.Now()
		if r := rs.Run(ctx, calls)[0]; r.State != events.StateSuccess {
			b.Fatal(r.Text())
		}
		localT = append(localT, t1.Sub(t0))
		remoteT = append(remoteT, time.Since(t1))
	}
	b.ReportMetric(pct(localT, 0.5), "local-p50-µs")
	b.ReportMetric(pct(localT, 0.99), "local-p99-µs")
	b.ReportMetric(pct(remoteT, 0.5), "remote-p50-µs")
	b.ReportMetric(pct(remoteT, 0.99), "remote-p99-µs")
	b.ReportMetric(pct(remoteT, 0.5)-pct(localT, 0.5), "overhead-p50-µs")
}

// BenchmarkRemoteThroughput sends batches of 32 concurrent calls of a tool
// that hashes 16 KiB to 1, 2 and 4 workers and reports calls/s.
func BenchmarkRemoteThroughput(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			bus := natstest.Bus(b, natsbus.WithListen("127.0.0.1:0"))
			for range n {
				benchWorker(b, bus)
			}
			c := remote.NewClient(tcpConn(b, bus))
			ctx := context.Background()
			tools, err := c.Discover(ctx)
			if err != nil || len(tools) != 1 {
				b.Fatal(tools, err)
			}
			agent := testutil.Kit(b, toolkit.WithMaxParallel(32))
			testutil.Add(b, agent, tools...)
			sess := testutil.Session(b, agent, "s")
			calls := make([]toolkit.Call, 32)
			for i := range calls {
				calls[i] = toolkit.Call{ID: fmt.Sprint("c", i), Name: "hash", Args: []byte(`{"n":16}`)}
			}
			start := time.Now()
			done := 0
			for b.Loop() {
				for _, r := range sess.Run(ctx, calls) {
					if r.State != events.StateSuccess {
						b.Fatal(r.Text())
					}
				}
				done += len(calls)
			}
			b.ReportMetric(float64(done)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

// BenchmarkRemoteEcho runs one call at a time of the benchmarks' echo tool
// (five fields in, the same out) on a worker, and the same work on a bare
// micro service with nc.Request, side by side: agent, worker and service
// in this process over in-process connections, so that allocations and CPU
// profiles show the remote path of both sides (bench/remote measures
// processes).
func BenchmarkRemoteEcho(b *testing.B) {
	bus := natstest.Bus(b)
	wk := testutil.Kit(b)
	testutil.Add(b, wk, echoTool())
	w, err := remote.Serve(connB(b, bus), wk)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Stop(context.Background()) })
	c := remote.NewClient(connB(b, bus))
	tools, err := c.Discover(context.Background())
	if err != nil || len(tools) != 1 {
		b.Fatal(tools, err)
	}
	agent := testutil.Kit(b)
	testutil.Add(b, agent, tools...)
	sess := testutil.Session(b, agent, "s")
	calls := []toolkit.Call{{ID: "c", Name: "echo", Args: []byte(echoArgs)}}
	b.Run("toolstream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := sess.Run(context.Background(), calls)[0]; r.State != events.StateSuccess {
				b.Fatal(r.Text())
			}
		}
	})
	svc, err := micro.AddService(connB(b, bus), micro.Config{Name: "anchor", Version: "1.0.0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Stop() })
	if err := svc.AddEndpoint("echo", micro.HandlerFunc(func(req micro.Request) {
		var in echoIn
		if err := json.Unmarshal(req.Data(), &in); err != nil {
			_ = req.Error("400", err.Error(), nil)
			return
		}
		_ = req.RespondJSON(in)
	}), micro.WithEndpointSubject("anchor.echo")); err != nil {
		b.Fatal(err)
	}
	nc := connB(b, bus)
	b.Run("micro", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := nc.Request("anchor.echo", []byte(echoArgs), 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			var out echoIn
			if err := json.Unmarshal(m.Data, &out); err != nil || out.Name != "seven" {
				b.Fatal(string(m.Data), err)
			}
		}
	})
}

func connB(b *testing.B, bus *natsbus.Bus) *nats.Conn {
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}
