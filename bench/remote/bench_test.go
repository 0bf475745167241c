// Package remotebench compares toolstream's remote tool workers with the
// natural anchor, a bare NATS micro service called with nc.Request, on real
// nats-server processes: one server, and a three-node cluster with the
// agent on one node and the workers on the others. It is part of the bench
// module so that it measures processes, not the library's tests.
package remotebench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

var (
	roundTime = flag.Duration("round", 2*time.Second, "how long each side runs in each round")
	rounds    = flag.Int("rounds", 3, "interleaved rounds per case")
)

func TestMain(m *testing.M) {
	if code, ok := runRole(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// echoIn is the tool's input on both sides: five fields.
type echoIn struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Tags  []string `json:"tags"`
	Score float64  `json:"score"`
	OK    bool     `json:"ok"`
}

const echoArgs = `{"id":7,"name":"seven","tags":["a","b"],"score":0.5,"ok":true}`

var want = echoIn{ID: 7, Name: "seven", Tags: []string{"a", "b"}, Score: 0.5, OK: true}

// echo is the work on both sides: the input is decoded before it, and its
// output encoded after it.
func echo(_ context.Context, in echoIn) (echoIn, error) { return in, nil }

func echoTool() *toolkit.Tool {
	return toolkit.MustTool(toolkit.Spec{Name: "echo", Description: "echoes its input", ReadOnly: true, ConcurrencySafe: true}, echo)
}

const anchorSubject = "anchor.echo"

// checkEcho fails an answer that is not the input back.
func checkEcho(b []byte) error {
	var got echoIn
	if err := json.Unmarshal(b, &got); err != nil {
		return fmt.Errorf("answer %q: %w", b, err)
	}
	if got.ID != want.ID || got.Name != want.Name || !slices.Equal(got.Tags, want.Tags) || got.Score != want.Score || got.OK != want.OK {
		return fmt.Errorf("answer %q is not the input", b)
	}
	return nil
}

// side is one way of calling the echo tool remotely.
type side struct {
	name    string
	workers []*proc
	call    func(ctx context.Context, i int) error // one call, from caller i
	batch   func(ctx context.Context, i int) error // four calls at once, from caller i
}

// callers is the most callers a case has at once.
const callers = 1000

// toolstreamSide is the agent's toolkit with the workers' tool, one
// session per caller, over two toolstream workers.
func toolstreamSide(tb testing.TB, t *topology) *side {
	s := &side{name: "toolstream"}
	for _, url := range t.workers {
		s.workers = append(s.workers, start(tb, "toolstream", url))
	}
	nc, err := nats.Connect(t.agent)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	c := remote.NewClient(nc)
	tb.Cleanup(func() { _ = c.Close() })
	tools, err := c.Discover(context.Background())
	if err != nil || len(tools) != 1 {
		tb.Fatalf("discover: %v %v", tools, err)
	}
	tk := toolkit.New()
	tb.Cleanup(func() { _ = tk.Close(context.Background()) })
	if err := tk.Add(tools[0]); err != nil {
		tb.Fatal(err)
	}
	sessions := make([]*toolkit.Session, callers)
	for i := range sessions {
		if sessions[i], err = tk.Session(fmt.Sprint("s", i)); err != nil {
			tb.Fatal(err)
		}
	}
	one := []toolkit.Call{{ID: "c", Name: "echo", Args: json.RawMessage(echoArgs)}}
	four := make([]toolkit.Call, 4)
	for i := range four {
		four[i] = toolkit.Call{ID: fmt.Sprint("c", i), Name: "echo", Args: json.RawMessage(echoArgs)}
	}
	run := func(ctx context.Context, i int, calls []toolkit.Call) error {
		for _, r := range sessions[i].Run(ctx, calls) {
			if r.State != events.StateSuccess {
				return fmt.Errorf("%s: %s", r.State, r.Text())
			}
			if err := checkEcho([]byte(r.Text())); err != nil {
				return err
			}
		}
		return nil
	}
	s.call = func(ctx context.Context, i int) error { return run(ctx, i, one) }
	s.batch = func(ctx context.Context, i int) error { return run(ctx, i, four) }
	return s
}

// microSide is nc.Request to two instances of the bare micro service.
func microSide(tb testing.TB, t *topology) *side {
	s := &side{name: "micro"}
	for _, url := range t.workers {
		s.workers = append(s.workers, start(tb, "micro", url))
	}
	nc, err := nats.Connect(t.agent)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	args := []byte(echoArgs)
	call := func(ctx context.Context) error {
		m, err := nc.RequestWithContext(ctx, anchorSubject, args)
		if err != nil {
			return err
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			return fmt.Errorf("refused %s: %s", code, m.Header.Get("Nats-Service-Error"))
		}
		return checkEcho(m.Data)
	}
	s.call = func(ctx context.Context, _ int) error { return call(ctx) }
	s.batch = func(ctx context.Context, _ int) error {
		errs := make(chan error, 4)
		for range 4 {
			go func() { errs <- call(ctx) }()
		}
		var first error
		for range 4 {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return s
}

// sample is what one side did in one round of a case.
type sample struct {
	lat      []time.Duration // per call, or per batch
	calls    int
	failed   int
	errs     map[string]int
	took     time.Duration
	procCPU  time.Duration // the agent and the side's workers
	agentCPU time.Duration // the agent alone
	serveCPU time.Duration // the servers
}

// String gives the sample's figures: latency, rate, CPU per call of the
// agent, the workers and the servers.
func (s *sample) String() string {
	n := time.Duration(max(s.calls, 1))
	return fmt.Sprintf("p50 %v p99 %v, %.0f calls/s, cpu/call agent %v workers %v servers %v",
		s.pct(0.5).Round(time.Microsecond), s.pct(0.99).Round(time.Microsecond), float64(s.calls)/s.took.Seconds(),
		(s.agentCPU / n).Round(100*time.Nanosecond), ((s.procCPU - s.agentCPU) / n).Round(100*time.Nanosecond), (s.serveCPU / n).Round(100*time.Nanosecond))
}

func (s *sample) pct(p float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	return s.lat[int(float64(len(s.lat)-1)*p)]
}

// measure runs n callers against a side for d: each makes calls (or
// batches of four) one after another.
func measure(t *topology, sd *side, n int, batches bool, d time.Duration) *sample {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	out := &sample{errs: map[string]int{}}
	var mu sync.Mutex
	cpu0, wcpu0, scpu0 := selfCPU(), workersCPU(sd), t.serversCPU()
	startAt := time.Now()
	end := startAt.Add(d)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var lat []time.Duration
			calls, failed := 0, 0
			errs := map[string]int{}
			for time.Now().Before(end) {
				t0 := time.Now()
				var err error
				if batches {
					err = sd.batch(ctx, i)
					calls += 4
				} else {
					err = sd.call(ctx, i)
					calls++
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					failed++
					msg := err.Error()
					if len(msg) > 120 {
						msg = msg[:120]
					}
					errs[msg]++
				}
			}
			mu.Lock()
			out.lat = append(out.lat, lat...)
			out.calls += calls
			out.failed += failed
			for k, v := range errs {
				out.errs[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	out.took = time.Since(startAt)
	out.agentCPU = selfCPU() - cpu0
	out.procCPU = out.agentCPU + workersCPU(sd) - wcpu0
	out.serveCPU = t.serversCPU() - scpu0
	sort.Slice(out.lat, func(i, j int) bool { return out.lat[i] < out.lat[j] })
	return out
}

func workersCPU(sd *side) time.Duration {
	var d time.Duration
	for _, w := range sd.workers {
		d += w.cpu()
	}
	return d
}

// ratios are toolstream ÷ micro for one round.
type ratios struct{ p50, p99, rate, procCPU, serveCPU, cpu float64 }

func compare(ts, mi *sample) ratios {
	per := func(d time.Duration, s *sample) float64 { return float64(d) / float64(max(s.calls, 1)) }
	rate := func(s *sample) float64 { return float64(s.calls) / s.took.Seconds() }
	return ratios{
		p50:      float64(ts.pct(0.5)) / float64(mi.pct(0.5)),
		p99:      float64(ts.pct(0.99)) / float64(mi.pct(0.99)),
		rate:     rate(ts) / rate(mi),
		procCPU:  per(ts.procCPU, ts) / per(mi.procCPU, mi),
		serveCPU: per(ts.serveCPU, ts) / per(mi.serveCPU, mi),
		cpu:      per(ts.procCPU+ts.serveCPU, ts) / per(mi.procCPU+mi.serveCPU, mi),
	}
}

// BenchmarkRemoteVsMicro runs each case in interleaved rounds (the side
// that goes first alternates) and reports the median over the rounds of
// each ratio, toolstream ÷ micro: p50 and p99 latency (per call, or per
// batch of four for sessions=1000x4), calls/s, and CPU per call of the
// processes (agent and workers), of the servers, and of both. It logs each
// round's figures and the ranges; failed calls fail the benchmark. Run it
// with -benchtime 1x; -round and -rounds set the time per side and the
// number of rounds.
func BenchmarkRemoteVsMicro(b *testing.B) {
	for _, topo := range []func(testing.TB) *topology{oneServer, cluster} {
		t := topo(b)
		ts, mi := toolstreamSide(b, t), microSide(b, t)
		cases := []struct {
			name    string
			n       int
			batches bool
		}{{"inflight=1", 1, false}, {"inflight=16", 16, false}, {"inflight=256", 256, false}, {"sessions=1000x4", callers, true}}
		for _, c := range cases {
			b.Run(strings.ReplaceAll(t.name, " ", "-")+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					var all []ratios
					for r := range *rounds {
						sides := []*side{mi, ts}
						if r%2 == 1 {
							sides = []*side{ts, mi}
						}
						got := map[string]*sample{}
						for _, sd := range sides {
							got[sd.name] = measure(t, sd, c.n, c.batches, *roundTime)
						}
						for name, s := range got {
							if s.failed > 0 {
								b.Errorf("%s, %s: %d of %d calls failed: %v", t.name, name, s.failed, s.calls, s.errs)
							}
						}
						rt := compare(got["toolstream"], got["micro"])
						all = append(all, rt)
						b.Logf("round %d: toolstream %s; micro %s", r+1, got["toolstream"], got["micro"])
					}
					report(b, all)
				}
			})
		}
	}
}

// report logs the ranges and reports the medians.
func report(b *testing.B, all []ratios) {
	pick := []struct {
		name string
		f    func(ratios) float64
	}{
		{"p50-x", func(r ratios) float64 { return r.p50 }},
		{"p99-x", func(r ratios) float64 { return r.p99 }},
		{"calls/s-x", func(r ratios) float64 { return r.rate }},
		{"cpu-proc-x", func(r ratios) float64 { return r.procCPU }},
		{"cpu-server-x", func(r ratios) float64 { return r.serveCPU }},
		{"cpu-x", func(r ratios) float64 { return r.cpu }},
	}
	var line []string
	for _, p := range pick {
		v := make([]float64, len(all))
		for i, r := range all {
			v[i] = p.f(r)
		}
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], p.name)
		line = append(line, fmt.Sprintf("%s %.2f-%.2f", p.name, v[0], v[len(v)-1]))
	}
	b.Logf("ranges over %d rounds: %s", len(all), strings.Join(line, ", "))
}

// TestSidesAgree: both sides answer the same call with the input back, on
// one server, so that the benchmark cannot measure an error path.
func TestSidesAgree(t *testing.T) {
	topo := oneServer(t)
	for _, sd := range []*side{toolstreamSide(t, topo), microSide(t, topo)} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := sd.call(ctx, 0); err != nil {
			t.Errorf("%s: %v", sd.name, err)
		}
		if err := sd.batch(ctx, 1); err != nil {
			t.Errorf("%s, a batch: %v", sd.name, err)
		}
		cancel()
	}
}
