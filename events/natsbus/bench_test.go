package natsbus_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// These benchmarks compare toolstream's path (tools emitting through the
// toolkit and the publisher) with raw nats.go doing the same amount of NATS
// work, side by side in one benchmark, and report the ratios.

const progressMsg = "scanning internal/schema/validate.go (file 42)"

// sampleEvent is what a progress event of the benchmark looks like on the
// wire, so that the raw side sends messages of the same size.
func sampleEvent() []byte {
	f := 0.42
	ev := &events.Event{Version: events.Version, Type: events.TypeProgress, Session: "bench", Call: "call-12",
		Tool: "emit", Seq: 123, Time: time.Now(), Progress: &events.Progress{Message: progressMsg, Fraction: &f}}
	return events.AppendJSON(nil, ev)
}

// emitKit is a toolkit whose "emit" tool reports n progress events.
func emitKit(b *testing.B, bus *natsbus.Bus) *toolkit.Toolkit {
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithMaxParallel(64), toolkit.WithFlushTimeout(time.Minute))
	b.Cleanup(func() { tk.Close(context.Background()) })
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "emit", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (struct{}, error) {
		em := stream.From(ctx)
		for i := range in.N {
			em.Progress(progressMsg, float64(i)/float64(in.N))
		}
		return struct{}{}, nil
	}))
	return tk
}

func emitCalls(tools, n int) []toolkit.Call {
	calls := make([]toolkit.Call, tools)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("call-%d", i), Name: "emit", Args: []byte(fmt.Sprintf(`{"n":%d}`, n))}
	}
	return calls
}

// counter counts messages on its own connection to the server, like a UI.
type counter struct {
	n    atomic.Int64
	nc   *nats.Conn
	want atomic.Int64
	done chan struct{}
	mu   sync.Mutex
}

func newCounter(b *testing.B, bus *natsbus.Bus, subject string) *counter {
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	c := &counter{nc: nc}
	sub, err := nc.Subscribe(subject, func(*nats.Msg) {
		if c.n.Add(1) == c.want.Load() {
			c.mu.Lock()
			close(c.done)
			c.mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	nc.Flush()
	b.Cleanup(func() { nc.Close() })
	return c
}

// expect arms the counter for want more messages.
func (c *counter) expect(want int64) {
	c.mu.Lock()
	c.done = make(chan struct{})
	c.mu.Unlock()
	c.n.Store(0)
	c.want.Store(want)
}

func (c *counter) wait(b *testing.B) {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("subscriber got %d of %d messages", c.n.Load(), c.want.Load())
	}
}

// BenchmarkProgressThroughput: 64 concurrent tools emitting progress, one
// subscriber, against a raw publish loop of same-size messages. Reports
// delivered events per second of each and their ratio (target >= 0.7).
func BenchmarkProgressThroughput(b *testing.B) {
	bus := natstest.Bus(b)
	tk := emitKit(b, bus)
	sess, _ := tk.Session("bench")
	const tools, perTool = 64, 500
	calls := emitCalls(tools, perTool)
	sub := newCounter(b, bus, bus.Subjects().All())
	// Same subject shape as ours (four tokens, a ">" subscription), so that
	// only what toolstream adds is measured.
	raw := newCounter(b, bus, "raw.>")
	payload := sampleEvent()
	pubConn, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	defer pubConn.Close()

	var ours, theirs []float64
	var dropped uint64
	for b.Loop() {
		// toolstream: every event of the batch, progress that survived included.
		before := bus.Publisher().Stats()
		start := time.Now()
		sub.expect(1 << 62) // unknown until the run ends
		sess.Run(context.Background(), calls)
		after := bus.Publisher().Stats()
		published := int64(after.Published - before.Published)
		dropped += after.DroppedProgress - before.DroppedProgress
		sub.want.Store(published)
		if sub.n.Load() >= published {
			sub.mu.Lock()
			select {
			case <-sub.done:
			default:
				close(sub.done)
			}
			sub.mu.Unlock()
		}
		sub.wait(b)
		ours = append(ours, float64(published)/time.Since(start).Seconds())

		// raw nats.go: the same number of same-size messages.
		raw.expect(published)
		start = time.Now()
		for range published {
			if err := pubConn.Publish("raw.bench.call-12.progress", payload); err != nil {
				b.Fatal(err)
			}
		}
		raw.wait(b)
		theirs = append(theirs, float64(published)/time.Since(start).Seconds())
	}
	o, t := median(ours), median(theirs)
	b.ReportMetric(o, "toolstream-events/s")
	b.ReportMetric(t, "raw-msgs/s")
	b.ReportMetric(o/t, "ratio")
	b.ReportMetric(float64(dropped)/float64(b.N), "dropped-progress/op")
	b.ReportMetric(float64(len(payload)), "bytes/msg")
}

// BenchmarkEmitLatency: from a tool emitting one progress event to a
// subscriber receiving it, against raw publish-to-subscriber of same-size
// messages. Reports p50 and p99 of each and the p50 ratio (target <= 1.5).
func BenchmarkEmitLatency(b *testing.B) {
	bus := natstest.Bus(b)
	sess, _ := emitKit(b, bus).Session("lat")
	arrived := make(chan struct{}, 1)
	subConn, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	defer subConn.Close()
	for _, subj := range []string{bus.Subjects().AllOfType(events.TypeProgress), "raw.*.*.progress"} {
		if _, err := subConn.Subscribe(subj, func(*nats.Msg) { arrived <- struct{}{} }); err != nil {
			b.Fatal(err)
		}
	}
	subConn.Flush()
	pubConn, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	defer pubConn.Close()
	payload := sampleEvent()

	const perRound = 200
	var ours, theirs []time.Duration
	tk := sess.Toolkit()
	tk.Replace(toolkit.MustTool(toolkit.Spec{Name: "pingpong"}, func(ctx context.Context, _ struct{}) (struct{}, error) {
		em := stream.From(ctx)
		for range perRound {
			t0 := time.Now()
			em.Progress(progressMsg, 0.5)
			<-arrived
			ours = append(ours, time.Since(t0))
		}
		return struct{}{}, nil
	}))

	for b.Loop() {
		sess.Run(context.Background(), []toolkit.Call{{ID: "p", Name: "pingpong"}})
		for range perRound {
			t0 := time.Now()
			pubConn.Publish("raw.lat.call-1.progress", payload)
			<-arrived
			theirs = append(theirs, time.Since(t0))
		}
	}
	op50, op99 := percentile(ours, 50), percentile(ours, 99)
	tp50, tp99 := percentile(theirs, 50), percentile(theirs, 99)
	b.ReportMetric(float64(op50)/1e3, "toolstream-p50-µs")
	b.ReportMetric(float64(op99)/1e3, "toolstream-p99-µs")
	b.ReportMetric(float64(tp50)/1e3, "raw-p50-µs")
	b.ReportMetric(float64(tp99)/1e3, "raw-p99-µs")
	b.ReportMetric(float64(op50)/float64(tp50), "p50-ratio")
}

// BenchmarkDurableThroughput: durable mode (JetStream, file storage, msg-id
// de-duplication) against raw JetStream async publishing of same-size
// messages to a stream with the same settings, with msg ids as durable mode
// sends them and without. Reports stored events per second and the ratios
// (target >= 0.7 of raw): ratio-vs-msgid compares like with like, ratio
// against publishing without ids, which the de-duplication of durable mode
// cannot match (its cost shows in raw-msgid vs raw).
func BenchmarkDurableThroughput(b *testing.B) {
	bus := natstest.Bus(b, natsbus.WithDurable(natsbus.Durable{}), natsbus.WithPublisherQueue(1<<20))
	tk := emitKit(b, bus)
	sess, _ := tk.Session("durable")
	const tools, perTool = 64, 100
	calls := emitCalls(tools, perTool)
	js := bus.JetStream()
	ctx := context.Background()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	payload := sampleEvent()
	stored := func(stream string) uint64 {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			b.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return info.State.Msgs
	}

	var ours, rawIDs, rawPlain []float64
	n := 0
	for b.Loop() {
		n++
		before := stored(bus.Stream())
		start := time.Now()
		sess.Run(ctx, calls)
		<-js.PublishAsyncComplete()
		count := stored(bus.Stream()) - before
		if count == 0 {
			time.Sleep(time.Second)
			b.Fatalf("nothing stored: publisher %+v, before %d, now %d, pending %d", bus.Publisher().Stats(), before, stored(bus.Stream()), js.PublishAsyncPending())
		}
		ours = append(ours, float64(count)/time.Since(start).Seconds())

		for _, withID := range []bool{true, false} {
			start = time.Now()
			for i := range count {
				m := nats.NewMsg(fmt.Sprintf("raw.durable.call-%d.progress", i%64))
				m.Data = payload
				var opts []jetstream.PublishOpt
				if withID {
					opts = append(opts, jetstream.WithMsgID(fmt.Sprintf("%d.%d", n, i)))
				}
				if _, err := js.PublishMsgAsync(m, opts...); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			rate := float64(count) / time.Since(start).Seconds()
			if withID {
				rawIDs = append(rawIDs, rate)
			} else {
				rawPlain = append(rawPlain, rate)
			}
		}
	}
	o, ti, tp := median(ours), median(rawIDs), median(rawPlain)
	b.ReportMetric(o, "toolstream-events/s")
	b.ReportMetric(ti, "raw-msgid-msgs/s")
	b.ReportMetric(tp, "raw-msgs/s")
	b.ReportMetric(o/tp, "ratio")
	b.ReportMetric(o/ti, "ratio-vs-msgid")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

// vsRawSizes are the events of BenchmarkEventsVsRaw: a typical progress
// event (157 bytes), and two of 8 KiB: tool output (paths and counts, a
// newline every ~45 bytes) and source code (quotes, tabs, '&', '<' and
// newlines: about one byte in twenty escaped, the worst case of the two).
func vsRawSizes() []struct{ name, msg string } {
	var listing strings.Builder
	for i := 0; listing.Len() < 9<<10; i++ {
		fmt.Fprintf(&listing, "src/pkg%d/file_%d.go: %d lines, %d bytes\n", i%7, i, i*13%900, i*977%40000)
	}
	line := "\tif err := json.Unmarshal(data, &v); err != nil || n < 0 { return fmt.Errorf(\"decoding %s: %w\", name, err) }\n"
	code := strings.Repeat(line, 9<<10/len(line)+1)
	return []struct{ name, msg string }{
		{"157B", "scanned src/a.go"},
		{"8KiB", fit8K(listing.String())},
		{"8KiB-code", fit8K(code)},
	}
}

// fit8K cuts text so that its progress event is 8 KiB once encoded.
func fit8K(text string) string {
	n := len(text)
	for n > 0 && len(vsRawPayload(text[:n])) > 8<<10 {
		n -= 8
	}
	return text[:n]
}

// vsRawPayload is a progress event carrying msg, as toolstream encodes it.
func vsRawPayload(msg string) []byte {
	return events.AppendJSON(nil, &events.Event{Version: events.Version, Type: events.TypeProgress, Session: "b",
		Call: "c0", Tool: "emit", Seq: 123, Time: time.Now(), Progress: &events.Progress{Message: msg}})
}

// fanIn counts the messages that all the subscribers of one side got.
type fanIn struct {
	n      atomic.Int64
	target atomic.Int64
	done   chan struct{}
}

func (f *fanIn) arm(total int64) {
	f.n.Store(0)
	f.target.Store(total)
}

func (f *fanIn) add() {
	if f.n.Add(1) == f.target.Load() {
		f.done <- struct{}{}
	}
}

func (f *fanIn) wait(b *testing.B, what string) {
	select {
	case <-f.done:
	case <-time.After(time.Minute):
		b.Fatalf("%s: subscribers got %d of %d messages", what, f.n.Load(), f.target.Load())
	}
}

// BenchmarkEventsVsRaw compares toolstream with raw nats.go publishing the
// same payload bytes (a progress event as toolstream encodes it) on subjects
// of the same shape, to the same subscribers (1, 8 or 64 connections to the
// same embedded server), in interleaved rounds:
//
//   - throughput: 8 tools emit 1,000 progress events (157 B) or 240 (8 KiB)
//     in all (four times as many with one subscriber, so that a round lasts
//     long enough), against one raw publisher sending as many messages; the
//     time runs until every subscriber has every message;
//   - latency: a tool emits one event and waits until every subscriber has
//     it, then publishes one raw message and waits the same way, 100 times
//     (alternating, so that both sides meet the same load).
//
// It reports events/s of each side and the median of the rounds' ratios
// (thr-ratio, target >= 0.8), the process's CPU time per message ours over
// raw (cpu-ratio: the whole process, server and subscribers included, and
// the garbage collection that falls in the round), the p50 and p99 latency
// of each and their ratios (p50-ratio, target <= 1.3).
func BenchmarkEventsVsRaw(b *testing.B) {
	for _, size := range vsRawSizes() {
		for _, subs := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/subs=%d", size.name, subs), func(b *testing.B) { benchVsRaw(b, size.msg, subs) })
		}
	}
}

func benchVsRaw(b *testing.B, msg string, subs int) {
	bus := natstest.Bus(b)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithFlushTimeout(time.Minute))
	b.Cleanup(func() { tk.Close(context.Background()) })
	ours, raw := &fanIn{done: make(chan struct{}, 1)}, &fanIn{done: make(chan struct{}, 1)}
	// The latency pings of ours go to a session of their own, where only
	// the progress events are counted: the ping call's start and result
	// events must not complete a ping.
	pings := &fanIn{done: make(chan struct{}, 1)}
	for range subs {
		nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		for subj, f := range map[string]*fanIn{"toolstream.b.>": ours, "toolstream.p.*.progress": pings, "raw.b.>": raw} {
			sub, err := nc.Subscribe(subj, func(*nats.Msg) { f.add() })
			if err != nil {
				b.Fatal(err)
			}
			sub.SetPendingLimits(-1, -1)
		}
		nc.Flush()
	}
	pub, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pub.Close)
	// The raw side sends exactly the bytes of one of our progress events.
	payload := vsRawPayload(msg)

	// Events per throughput round: with one subscriber a round of 1,000
	// (240 of 8 KiB) lasts 2-3 ms, within reach of a stall of the machine;
	// four times as many make it last as long as with 8 subscribers.
	total := 1000
	if len(msg) > 1<<10 {
		total = 240
	}
	if subs == 1 {
		total *= 4
	}
	const tools, rounds = 8, 100
	var lat, rawLat []time.Duration
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "emit", ConcurrencySafe: true}, func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (struct{}, error) {
		em := stream.From(ctx)
		for range in.N {
			em.Progress(msg, -1)
		}
		return struct{}{}, nil
	}))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "ping"}, func(ctx context.Context, _ struct{}) (struct{}, error) {
		em := stream.From(ctx)
		for range rounds {
			// One of ours, then one raw, from the same goroutine: both
			// sides see the same moment of the machine.
			pings.arm(int64(subs))
			t0 := time.Now()
			em.Progress(msg, -1)
			pings.wait(b, "ping")
			lat = append(lat, time.Since(t0))
			raw.arm(int64(subs))
			t0 = time.Now()
			if err := pub.Publish("raw.b.c0.progress", payload); err != nil {
				return struct{}{}, err
			}
			raw.wait(b, "raw ping")
			rawLat = append(rawLat, time.Since(t0))
		}
		return struct{}{}, nil
	}))
	sess, _ := tk.Session("b")
	calls := make([]toolkit.Call, tools)
	for i := range calls {
		calls[i] = toolkit.Call{ID: fmt.Sprintf("c%d", i), Name: "emit", Args: []byte(fmt.Sprintf(`{"n":%d}`, total/tools))}
	}
	pingSess, _ := tk.Session("p")
	pingCall := []toolkit.Call{{ID: "c0", Name: "ping"}}

	// Throughput of each side, one after the other, in turn first. A round
	// returns messages per second and the process's CPU time per message.
	n := int64(total + 2*tools) // progress plus each call's start and result
	oursRound := func() (rate float64, cpu time.Duration) {
		ours.arm(n * int64(subs))
		before := bus.Publisher().Stats().Published
		start, cpu0 := time.Now(), processCPU()
		sess.Run(context.Background(), calls)
		if got := int64(bus.Publisher().Stats().Published - before); got != n {
			b.Fatalf("published %d events, want %d (%+v)", got, n, bus.Publisher().Stats())
		}
		ours.wait(b, "toolstream")
		return float64(n) / time.Since(start).Seconds(), (processCPU() - cpu0) / time.Duration(n)
	}
	rawRound := func() (rate float64, cpu time.Duration) {
		raw.arm(n * int64(subs))
		start, cpu0 := time.Now(), processCPU()
		for range n {
			if err := pub.Publish("raw.b.c0.progress", payload); err != nil {
				b.Fatal(err)
			}
		}
		raw.wait(b, "raw")
		return float64(n) / time.Since(start).Seconds(), (processCPU() - cpu0) / time.Duration(n)
	}
	var oursRate, rawRate, ratios, cpuRatios []float64
	for i := 0; b.Loop(); i++ {
		var o, r float64
		var oc, rc time.Duration
		if i%2 == 0 {
			o, oc = oursRound()
			r, rc = rawRound()
		} else {
			r, rc = rawRound()
			o, oc = oursRound()
		}
		oursRate, rawRate, ratios = append(oursRate, o), append(rawRate, r), append(ratios, o/r)
		cpuRatios = append(cpuRatios, float64(oc)/float64(rc))
		pingSess.Run(context.Background(), pingCall) // latency, alternating
	}
	o, r := median(oursRate), median(rawRate)
	b.ReportMetric(o, "events/s")
	b.ReportMetric(r, "raw-msgs/s")
	// The ratio of each round's pair, whose two sides met the same load.
	b.ReportMetric(median(ratios), "thr-ratio")
	// CPU time per message, ours over raw: what a machine without spare
	// cores pays (then throughput goes as its inverse).
	b.ReportMetric(median(cpuRatios), "cpu-ratio")
	op50, rp50 := percentile(lat, 50), percentile(rawLat, 50)
	b.ReportMetric(float64(op50)/1e3, "p50-µs")
	b.ReportMetric(float64(rp50)/1e3, "raw-p50-µs")
	b.ReportMetric(float64(op50)/float64(rp50), "p50-ratio")
	b.ReportMetric(float64(percentile(lat, 99))/1e3, "p99-µs")
	b.ReportMetric(float64(percentile(rawLat, 99))/1e3, "raw-p99-µs")
	b.ReportMetric(float64(percentile(lat, 99))/float64(percentile(rawLat, 99)), "p99-ratio")
	b.ReportMetric(float64(len(payload)), "bytes/msg")
}
