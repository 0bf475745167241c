package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/telemetry/internal/semconv"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// rig is a toolkit traced into an in-memory exporter and measured by a
// manual reader.
type rig struct {
	tk     *toolkit.Toolkit
	tel    *telemetry.Telemetry
	exp    *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
}

func newRig(t *testing.T, topts []telemetry.Option, kopts ...toolkit.Option) *rig {
	t.Helper()
	r := &rig{exp: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.exp))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := telemetry.New(append([]telemetry.Option{telemetry.WithTracerProvider(r.tp), telemetry.WithMeterProvider(mp)}, topts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r.tel = tel
	r.tk = testutil.Kit(t, append([]toolkit.Option{toolkit.WithTracer(tel)}, kopts...)...)
	return r
}

// span returns the ended span of that name; there must be exactly one.
func (r *rig) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range r.exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q; spans: %v", len(found), name, names(r.exp.GetSpans()))
	}
	return found[0]
}

func names(ss tracetest.SpanStubs) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// checkAttrs holds a span's attributes to exactly want.
func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: no attribute %s", s.Name, k)
			continue
		}
		if fmt.Sprint(g.AsInterface()) != fmt.Sprint(v) {
			t.Errorf("%s: %s = %v, want %v", s.Name, k, g.AsInterface(), v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected attribute %s = %v", s.Name, k, v.AsInterface())
		}
	}
}

func eventNames(s tracetest.SpanStub) []string {
	var out []string
	for _, e := range s.Events {
		n := e.Name
		for _, a := range e.Attributes {
			n += fmt.Sprintf(" %s=%v", a.Key, a.Value.AsInterface())
		}
		out = append(out, n)
	}
	return out
}

func tool[In any](t *testing.T, spec toolkit.Spec, fn func(context.Context, In) (string, error)) *toolkit.Tool {
	return testutil.Tool(t, spec, fn)
}

type pathIn struct {
	Path string `json:"path"`
}

// TestRunSpans: a batch of calls under the caller's span is a batch span
// with one span per call, named and attributed by the GenAI conventions,
// the failures with error.type from their state; the handler's own spans
// are children of its call's.
func TestRunSpans(t *testing.T) {
	r := newRig(t, nil)
	var inner trace.SpanContext
	testutil.Add(t, r.tk,
		tool(t, toolkit.Spec{Name: "read", Description: "Reads a file.", ConcurrencySafe: true}, func(ctx context.Context, in pathIn) (string, error) {
			_, span := r.tp.Tracer("handler").Start(ctx, "read the file")
			inner = span.SpanContext()
			span.End()
			return "contents of " + in.Path, nil
		}),
		tool(t, toolkit.Spec{Name: "fail", ConcurrencySafe: true}, func(ctx context.Context, in struct{}) (string, error) {
			return "", errors.New("disk on fire")
		}))

	ctx, root := r.tp.Tracer("agent").Start(context.Background(), "invoke_agent")
	sess := testutil.Session(t, r.tk, "conv-1")
	rs := sess.Run(toolkit.WithAgent(ctx, "planner"), []toolkit.Call{
		testutil.Call("c1", "read", `{"path":"a.txt"}`),
		testutil.Call("c2", "fail", `{}`),
		testutil.Call("c3", "nope", `{}`),
	})
	root.End()
	if rs[0].State != events.StateSuccess || rs[1].State != events.StateError || rs[2].State != events.StateError {
		t.Fatalf("states: %s %s %s", rs[0].State, rs[1].State, rs[2].State)
	}

	batch := r.span(t, semconv.BatchSpan)
	read := r.span(t, "execute_tool read")
	fail := r.span(t, "execute_tool fail")
	nope := r.span(t, "execute_tool nope")
	handler := r.span(t, "read the file")
	if got := len(r.exp.GetSpans()); got != 6 {
		t.Errorf("%d spans, want 6: %v", got, names(r.exp.GetSpans()))
	}

	// Parents: caller ← batch ← calls ← the handler's span, one trace.
	if batch.Parent.SpanID() != root.SpanContext().SpanID() {
		t.Errorf("the batch's parent is %s, want the caller's span", batch.Parent.SpanID())
	}
	for _, s := range []tracetest.SpanStub{read, fail, nope} {
		if s.Parent.SpanID() != batch.SpanContext.SpanID() {
			t.Errorf("%s: parent %s, want the batch %s", s.Name, s.Parent.SpanID(), batch.SpanContext.SpanID())
		}
		if s.SpanContext.TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s: another trace", s.Name)
		}
		if s.SpanKind != trace.SpanKindInternal {
			t.Errorf("%s: kind %v", s.Name, s.SpanKind)
		}
	}
	if handler.Parent.SpanID() != read.SpanContext.SpanID() || inner.SpanID() != handler.SpanContext.SpanID() {
		t.Errorf("the handler's span's parent is %s, want the call's %s", handler.Parent.SpanID(), read.SpanContext.SpanID())
	}

	checkAttrs(t, batch, map[attribute.Key]any{
		semconv.BatchID: batchID(t, batch), semconv.ConversationID: "conv-1", semconv.BatchSize: 3,
		semconv.AgentID: "planner", semconv.BatchFailed: 2,
	})
	checkAttrs(t, read, map[attribute.Key]any{
		semconv.OperationName: "execute_tool", semconv.ToolName: "read", semconv.ToolCallID: "c1",
		semconv.ToolType: "function", semconv.ToolDescription: "Reads a file.",
		semconv.ConversationID: "conv-1", semconv.AgentID: "planner",
	})
	checkAttrs(t, fail, map[attribute.Key]any{
		semconv.OperationName: "execute_tool", semconv.ToolName: "fail", semconv.ToolCallID: "c2",
		semconv.ToolType: "function", semconv.ConversationID: "conv-1", semconv.AgentID: "planner",
		semconv.ErrorType: "error",
	})
	checkAttrs(t, nope, map[attribute.Key]any{
		semconv.OperationName: "execute_tool", semconv.ToolName: "nope", semconv.ToolCallID: "c3",
		semconv.ToolType: "function", semconv.ConversationID: "conv-1", semconv.AgentID: "planner",
		semconv.ErrorType: "error",
	})
	if read.Status.Code != codes.Unset {
		t.Errorf("read: status %v", read.Status)
	}
	// Without WithErrorText, no description: error.type says how it failed.
	if fail.Status.Code != codes.Error || fail.Status.Description != "" {
		t.Errorf("fail: status %+v", fail.Status)
	}
	if nope.Status.Code != codes.Error || nope.Status.Description != "" {
		t.Errorf("nope: status %+v", nope.Status)
	}
	// One attempt each for the calls that ran; an unknown tool runs none.
	if got := eventNames(read); !slices.Equal(got, []string{"toolstream.attempt toolstream.attempt=1"}) {
		t.Errorf("read's events: %q", got)
	}
	if got := eventNames(nope); len(got) != 0 {
		t.Errorf("nope's events: %q", got)
	}
	// The arguments and results are not recorded without WithContent.
	if _, ok := attrs(read)[semconv.ToolArguments]; ok {
		t.Error("arguments recorded without WithContent")
	}
}

func batchID(t *testing.T, s tracetest.SpanStub) string {
	v, ok := attrs(s)[semconv.BatchID]
	if !ok || !strings.HasPrefix(v.AsString(), "batch-") {
		t.Fatalf("batch id %v", v.AsString())
	}
	return v.AsString()
}

// TestContentOptIn: WithContent records the arguments and the result.
func TestContentOptIn(t *testing.T) {
	r := newRig(t, []telemetry.Option{telemetry.WithContent()})
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "read"}, func(ctx context.Context, in pathIn) (string, error) {
		return "contents of " + in.Path, nil
	}))
	testutil.Run(t, r.tk, "s", testutil.Call("c1", "read", `{"path":"a.txt"}`))
	a := attrs(r.span(t, "execute_tool read"))
	if got := a[semconv.ToolArguments].AsString(); got != `{"path":"a.txt"}` {
		t.Errorf("arguments %q", got)
	}
	if got := a[semconv.ToolResult].AsString(); got != "contents of a.txt" {
		t.Errorf("result %q", got)
	}
}

// TestRetryEvents: a call that interceptors.Retry runs three times has one
// attempt event per attempt and a reset event for each attempt voided.
func TestRetryEvents(t *testing.T) {
	r := newRig(t, nil)
	n := 0
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "flaky"}, func(ctx context.Context, in struct{}) (string, error) {
		n++
		if n < 3 {
			return "", interceptors.Transient(fmt.Errorf("try %d failed", n))
		}
		return "ok", nil
	}))
	r.tk.Use(interceptors.Retry(interceptors.RetryBackoff(time.Millisecond, time.Millisecond), interceptors.RetryJitter(false)))
	rs := testutil.Run(t, r.tk, "s", testutil.Call("c1", "flaky", `{}`))
	if rs[0].State != events.StateSuccess {
		t.Fatalf("state %s: %v", rs[0].State, rs[0].Err)
	}
	s := r.span(t, "execute_tool flaky")
	want := []string{
		"toolstream.attempt toolstream.attempt=1",
		"toolstream.reset",
		"toolstream.attempt toolstream.attempt=2",
		"toolstream.reset",
		"toolstream.attempt toolstream.attempt=3",
	}
	if got := eventNames(s); !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	if _, ok := attrs(s)[semconv.ErrorType]; ok {
		t.Error("error.type on a call that succeeded in the end")
	}
}

// TestApprovalEvents: a call interceptors.Permissions asks about is
// suspended, asked, approved and run: four span events in that order, and
// the wait is measured.
func TestApprovalEvents(t *testing.T) {
	asked := make(chan struct{})
	var once sync.Once
	r := newRig(t, nil, toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == interceptors.ApprovalEvent {
			once.Do(func() { close(asked) }) // the request went out
		}
	})))
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll))
	r.tk.Use(perms.Interceptor())
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "write"}, func(ctx context.Context, in pathIn) (string, error) {
		return "written", nil
	}))
	sess := testutil.Session(t, r.tk, "s")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "write", `{"path":"x"}`)})
	testutil.WaitFor(t, asked, "the approval request")
	time.Sleep(20 * time.Millisecond) // a wait worth measuring
	if err := perms.Approve("s", "c1"); err != nil {
		t.Fatal(err)
	}
	if rs := b.Wait(); rs[0].State != events.StateSuccess {
		t.Fatalf("state %s: %v", rs[0].State, rs[0].Err)
	}
	s := r.span(t, "execute_tool write")
	got := eventNames(s)
	if len(got) != 4 || got[0] != "toolstream.suspend toolstream.suspend.reason=approval" ||
		!strings.HasPrefix(got[1], "toolstream.approval toolstream.approval.status=pending") ||
		got[2] != "toolstream.approval toolstream.approval.status=approved" ||
		got[3] != "toolstream.attempt toolstream.attempt=1" {
		t.Errorf("events: %q", got)
	}

	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	h := histogram(t, rm, semconv.MetricApprovalWait)
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum < 0.02 {
		t.Fatalf("approval wait: %+v", h.DataPoints)
	}
	dp := h.DataPoints[0]
	if v, _ := dp.Attributes.Value(semconv.ToolName); v.AsString() != "write" {
		t.Errorf("approval wait tool %v", v.AsString())
	}
	if v, _ := dp.Attributes.Value(semconv.ApprovalStatus); v.AsString() != "approved" {
		t.Errorf("approval wait status %v", v.AsString())
	}
}

// TestErrorTypes: error.type is the call's state for a timeout, a denial
// and an interruption.
func TestErrorTypes(t *testing.T) {
	r := newRig(t, nil)
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithRules(interceptors.Rule{Tool: "rm", Decision: interceptors.Deny, Reason: "never"}))
	r.tk.Use(perms.Interceptor())
	release := make(chan struct{})
	testutil.Add(t, r.tk,
		tool(t, toolkit.Spec{Name: "slow", Timeout: 20 * time.Millisecond}, func(ctx context.Context, in struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}),
		tool(t, toolkit.Spec{Name: "rm"}, func(ctx context.Context, in struct{}) (string, error) { return "gone", nil }),
		tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, in struct{}) (string, error) {
			close(release)
			<-ctx.Done()
			return "", ctx.Err()
		}),
		tool(t, toolkit.Spec{Name: "after"}, func(ctx context.Context, in struct{}) (string, error) { return "", nil }))
	testutil.Run(t, r.tk, "s", testutil.Call("c1", "slow", `{}`), testutil.Call("c2", "rm", `{}`))
	sess := testutil.Session(t, r.tk, "s2")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c3", "wait", `{}`), testutil.Call("c4", "after", `{}`)})
	<-release
	b.Cancel()
	b.Wait()

	for name, want := range map[string]string{
		"execute_tool slow": "timeout", "execute_tool rm": "denied",
		"execute_tool wait": "interrupted", "execute_tool after": "interrupted",
	} {
		s := r.span(t, name)
		if got := attrs(s)[semconv.ErrorType].AsString(); got != want {
			t.Errorf("%s: error.type %q, want %q", name, got, want)
		}
		if s.Status.Code != codes.Error {
			t.Errorf("%s: status %v", name, s.Status.Code)
		}
	}
	// The call that never started has a span all the same, with no attempt.
	if got := eventNames(r.span(t, "execute_tool after")); len(got) != 0 {
		t.Errorf("a call that never started has events %q", got)
	}
	var batches int
	for _, s := range r.exp.GetSpans() {
		if s.Name == semconv.BatchSpan {
			batches++
			if got := attrs(s)[semconv.BatchID].AsString(); strings.HasSuffix(got, "-2") && attrs(s)[semconv.ErrorType].AsString() != "interrupted" {
				t.Errorf("the cancelled batch's error.type: %v", attrs(s)[semconv.ErrorType])
			}
		}
	}
	if batches != 2 {
		t.Errorf("%d batch spans", batches)
	}
}

func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Histogram[float64] {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				h, ok := m.Data.(metricdata.Histogram[float64])
				if !ok {
					t.Fatalf("%s is a %T", name, m.Data)
				}
				return h
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Histogram[float64]{}
}

func sums(t *testing.T, rm metricdata.ResourceMetrics, name string) []metricdata.DataPoint[int64] {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				s, ok := m.Data.(metricdata.Sum[int64])
				if !ok {
					t.Fatalf("%s is a %T", name, m.Data)
				}
				return s.DataPoints
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// TestMetrics: the duration histogram per tool and state, the calls in
// flight (one while a call runs, none after), and what the sources given
// to WatchToolkit and WatchDelivery lost.
func TestMetrics(t *testing.T) {
	r := newRig(t, nil)
	running := make(chan struct{})
	release := make(chan struct{})
	testutil.Add(t, r.tk,
		tool(t, toolkit.Spec{Name: "ok", ConcurrencySafe: true}, func(ctx context.Context, in struct{}) (string, error) { return "fine", nil }),
		tool(t, toolkit.Spec{Name: "hold"}, func(ctx context.Context, in struct{}) (string, error) {
			close(running)
			<-release
			return "done", nil
		}),
		tool(t, toolkit.Spec{Name: "bad", ConcurrencySafe: true}, func(ctx context.Context, in struct{}) (string, error) { return "", errors.New("no") }))
	testutil.Run(t, r.tk, "s", testutil.Call("a", "ok", `{}`), testutil.Call("b", "ok", `{}`), testutil.Call("c", "bad", `{}`))

	sess := testutil.Session(t, r.tk, "s")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("h", "hold", `{}`)})
	<-running
	var rm metricdata.ResourceMetrics
	collect := func() {
		if err := r.reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
	}
	collect()
	active := func(tool string) int64 {
		for _, dp := range sums(t, rm, semconv.MetricActive) {
			if v, _ := dp.Attributes.Value(semconv.ToolName); v.AsString() == tool {
				return dp.Value
			}
		}
		return 0
	}
	if got := active("hold"); got != 1 {
		t.Errorf("hold in flight: %d, want 1", got)
	}
	close(release)
	b.Wait()

	var lost telemetry.Delivery
	var mu sync.Mutex
	r.tel.WatchToolkit(r.tk)
	r.tel.WatchDelivery("nats", func() telemetry.Delivery {
		mu.Lock()
		defer mu.Unlock()
		return lost
	})
	mu.Lock()
	lost = telemetry.Delivery{DroppedProgress: 7, Undelivered: 2}
	mu.Unlock()
	collect()
	if got := active("hold"); got != 0 {
		t.Errorf("hold in flight after it finished: %d", got)
	}
	if got := active("ok"); got != 0 {
		t.Errorf("ok in flight: %d", got)
	}
	counts := map[string]uint64{}
	for _, dp := range histogram(t, rm, semconv.MetricDuration).DataPoints {
		tool, _ := dp.Attributes.Value(semconv.ToolName)
		state, _ := dp.Attributes.Value(semconv.CallState)
		et, hasET := dp.Attributes.Value(semconv.ErrorType)
		if hasET != (state.AsString() != "success") || hasET && et.AsString() != state.AsString() {
			t.Errorf("%s/%s: error.type %v", tool.AsString(), state.AsString(), et.AsString())
		}
		counts[tool.AsString()+"/"+state.AsString()] += dp.Count
	}
	if want := map[string]uint64{"ok/success": 2, "bad/error": 1, "hold/success": 1}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("durations %v, want %v", counts, want)
	}
	got := map[string]int64{}
	for _, dp := range sums(t, rm, semconv.MetricDropped) {
		v, _ := dp.Attributes.Value(semconv.Source)
		got["dropped/"+v.AsString()] = dp.Value
	}
	for _, dp := range sums(t, rm, semconv.MetricUndelivered) {
		v, _ := dp.Attributes.Value(semconv.Destination)
		got["undelivered/"+v.AsString()] = dp.Value
	}
	if want := map[string]int64{"dropped/observers": 0, "dropped/nats": 7, "undelivered/nats": 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lost %v, want %v", got, want)
	}
}

// listen records every event published on bus, as a subscriber in another
// process would get them (Event.Trace from the message headers).
func listen(t *testing.T, bus *natsbus.Bus) *testutil.Recorder {
	t.Helper()
	rec := &testutil.Recorder{}
	sub, err := bus.Subscribe(bus.Subjects().All(), rec.Observe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := bus.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestNATSTraceHeaders: every event of a traced call published to NATS
// carries the call span's traceparent, the batch's session-level events the
// batch span's, live and replayed; a subscriber links to the span.
func TestNATSTraceHeaders(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "core", true: "durable"}[durable], func(t *testing.T) {
			var opts []natsbus.Option
			if durable {
				opts = append(opts, natsbus.WithDurable(natsbus.Durable{Memory: true}))
			}
			bus := natstest.Bus(t, opts...)
			rec := listen(t, bus)
			r := newRig(t, nil, toolkit.WithInlineObserver(bus.Publisher()), toolkit.WithBatchEndEvents())
			testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "work"}, func(ctx context.Context, in struct{}) (string, error) {
				stream.From(ctx).Progress("half", 0.5)
				return "done", nil
			}))
			testutil.Run(t, r.tk, "conv", testutil.Call("c1", "work", `{}`))
			call := r.span(t, "execute_tool work")
			batch := r.span(t, semconv.BatchSpan)
			wantCall := fmt.Sprintf("00-%s-%s-01", call.SpanContext.TraceID(), call.SpanContext.SpanID())
			wantBatch := fmt.Sprintf("00-%s-%s-01", batch.SpanContext.TraceID(), batch.SpanContext.SpanID())

			check := func(what string, evs []*events.Event) {
				t.Helper()
				var types []events.Type
				for _, ev := range evs {
					types = append(types, ev.Type)
					want := wantCall
					if ev.Call == "" {
						want = wantBatch
					}
					if ev.Trace == nil || ev.Trace.TraceParent() != want {
						t.Errorf("%s: %s event's trace %v, want %s", what, ev.Type, ev.Trace, want)
						continue
					}
					link, ok := telemetry.Link(ev)
					if !ok || link.SpanContext.TraceID() != call.SpanContext.TraceID() || !link.SpanContext.IsRemote() {
						t.Errorf("%s: %s event's link %+v", what, ev.Type, link)
					}
				}
				want := []events.Type{"start", "progress", "delta", "result", "batch_end"}
				if !slices.Equal(types, want) {
					t.Errorf("%s: events %v, want %v", what, types, want)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				n := len(rec.All())
				if n >= 5 || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			check("live", rec.All())
			if !durable {
				return
			}
			var replayed []*events.Event
			done := make(chan struct{})
			stop, err := bus.Replay(context.Background(), bus.Subjects().All(), 1, func(seq uint64, ev *events.Event) {
				replayed = append(replayed, ev)
				if len(replayed) == 5 {
					close(done)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, done, "the replay")
			stop()
			check("replayed", replayed)
		})
	}
}

// TestContinueTrace: a trace context read from an event continues the
// trace in another place (a remote worker's spans join the caller's).
func TestContinueTrace(t *testing.T) {
	r := newRig(t, nil)
	var got events.Trace
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "remote"}, func(ctx context.Context, in struct{}) (string, error) {
		got = tracehook.Of(ctx) // what a request to a worker would carry
		return "", nil
	}))
	testutil.Run(t, r.tk, "s", testutil.Call("c1", "remote", `{}`))
	call := r.span(t, "execute_tool remote")
	if got == nil || got.TraceParent() == "" {
		t.Fatal("no trace context in the handler's context")
	}
	worker := events.TraceContext{Parent: got.TraceParent(), State: got.TraceState()}
	_, span := r.tp.Tracer("worker").Start(telemetry.ContextWithTrace(context.Background(), worker), "worker runs it")
	span.End()
	w := r.span(t, "worker runs it")
	if w.Parent.SpanID() != call.SpanContext.SpanID() || w.SpanContext.TraceID() != call.SpanContext.TraceID() {
		t.Errorf("the worker's span is not the call's child: parent %s, call %s", w.Parent.SpanID(), call.SpanContext.SpanID())
	}
}

// TestGroupsAndSkillsSpans: reset_tools and a skill load have spans of
// their own under their calls'.
func TestGroupsAndSkillsSpans(t *testing.T) {
	r := newRig(t, nil)
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "mean"}, func(ctx context.Context, in struct{}) (string, error) { return "2", nil }),
		tool(t, toolkit.Spec{Name: "plot"}, func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }))
	gm, err := groups.Install(r.tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := gm.Add(groups.Group{Name: "stats", Description: "Statistics.", Tools: []string{"mean"}},
		groups.Group{Name: "charts", Description: "Charts.", Tools: []string{"plot"}}); err != nil {
		t.Fatal(err)
	}
	lib, err := skills.NewLibrary(skills.Repository{Name: "mine", FS: fstest.MapFS{
		"stats/SKILL.md": {Data: []byte("---\nname: stats\ndescription: Summarise numbers.\ntool-groups: [stats]\n---\nCall mean.\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skills.Install(r.tk, lib, skills.WithGroups(gm)); err != nil {
		t.Fatal(err)
	}
	rs := testutil.Run(t, r.tk, "s",
		testutil.Call("c1", "reset_tools", `{"charts":true}`),
		testutil.Call("c2", "load_skill_through_path", `{"skillId":"stats","path":"SKILL.md"}`))
	for _, res := range rs {
		if res.State != events.StateSuccess {
			t.Fatalf("%s: %s %v", res.Call.Name, res.State, res.Err)
		}
	}
	reset := r.span(t, "reset_tools")
	load := r.span(t, "load_skill stats")
	if p := r.span(t, "execute_tool reset_tools"); reset.Parent.SpanID() != p.SpanContext.SpanID() {
		t.Error("reset_tools' span is not its call's child")
	}
	if p := r.span(t, "execute_tool load_skill_through_path"); load.Parent.SpanID() != p.SpanContext.SpanID() {
		t.Error("the load's span is not its call's child")
	}
	checkAttrs(t, reset, map[attribute.Key]any{
		"toolstream.groups.requested": []string{"charts"}, "toolstream.groups.active": []string{"charts"},
		"toolstream.groups.activated": []string{"charts"}, "toolstream.groups.deactivated": []string(nil),
	})
	checkAttrs(t, load, map[attribute.Key]any{
		"toolstream.skill.name": "stats", "toolstream.skill.path": "SKILL.md",
		"toolstream.groups.activated": []string{"stats"},
	})
}

// TestBatchApprovalEvents: a batch approval (Permissions.BatchApproval) is
// recorded on the batch's span, its wait measured without a tool, and the
// session-level approval events on NATS-bound observers carry the batch
// span's trace context.
func TestBatchApprovalEvents(t *testing.T) {
	asked := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var traces []events.Trace
	r := newRig(t, nil, toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type == interceptors.ApprovalEvent && ev.Call == "" {
			mu.Lock()
			traces = append(traces, ev.Trace)
			mu.Unlock()
			once.Do(func() { close(asked) })
		}
	})))
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AskAll))
	r.tk.Use(perms.Interceptor())
	if err := r.tk.Use(perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "write"}, func(ctx context.Context, in pathIn) (string, error) {
		return "written", nil
	}))
	sess := testutil.Session(t, r.tk, "s")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "write", `{"path":"x"}`), testutil.Call("c2", "write", `{"path":"y"}`)})
	testutil.WaitFor(t, asked, "the batch's approval request")
	if err := perms.Approve("s", b.ID()); err != nil {
		t.Fatal(err)
	}
	for _, res := range b.Wait() {
		if res.State != events.StateSuccess {
			t.Fatalf("%s: %s %v", res.Call.ID, res.State, res.Err)
		}
	}
	batch := r.span(t, semconv.BatchSpan)
	if got := eventNames(batch); len(got) != 2 || !strings.HasPrefix(got[0], "toolstream.approval toolstream.approval.status=pending") ||
		got[1] != "toolstream.approval toolstream.approval.status=approved" {
		t.Errorf("the batch's events: %q", got)
	}
	want := fmt.Sprintf("00-%s-%s-01", batch.SpanContext.TraceID(), batch.SpanContext.SpanID())
	mu.Lock()
	for _, tr := range traces {
		if tr == nil || tr.TraceParent() != want {
			t.Errorf("a batch approval event's trace %v, want %s", tr, want)
		}
	}
	mu.Unlock()
	// The calls were approved with their batch: no approval on their spans.
	for _, name := range []string{"execute_tool write"} {
		for _, s := range r.exp.GetSpans() {
			if s.Name == name && len(eventNames(s)) != 1 {
				t.Errorf("%s: events %q", name, eventNames(s))
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	h := histogram(t, rm, semconv.MetricApprovalWait)
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 {
		t.Fatalf("approval wait: %+v", h.DataPoints)
	}
	if _, ok := h.DataPoints[0].Attributes.Value(semconv.ToolName); ok {
		t.Error("a batch's approval wait names a tool")
	}
}

// incomparableProvider is a tracer provider whose type cannot be compared
// with ==: telemetry must still cache it and trace with it.
type incomparableProvider struct {
	embedded.TracerProvider
	tags  []string
	inner trace.TracerProvider
}

func (p incomparableProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return p.inner.Tracer(name, opts...)
}

// TestIncomparableProvider: a provider of a type == panics on is used, not
// compared: every batch is traced, none panics.
func TestIncomparableProvider(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := telemetry.New(telemetry.WithTracerProvider(incomparableProvider{tags: []string{"x"}, inner: tp}))
	if err != nil {
		t.Fatal(err)
	}
	tk := testutil.Kit(t, toolkit.WithTracer(tel))
	testutil.Add(t, tk, testutil.Tool(t, toolkit.Spec{Name: "noop"}, func(ctx context.Context, _ struct{}) (string, error) { return "", nil }))
	sess := testutil.Session(t, tk, "s")
	for range 3 {
		if r := sess.Run(context.Background(), oneCall)[0]; r.State != events.StateSuccess {
			t.Fatal(r.Err)
		}
	}
	batches := 0
	for _, s := range exp.GetSpans() {
		if s.Name == semconv.BatchSpan {
			batches++
		}
	}
	if batches != 3 {
		t.Errorf("%d batch spans for 3 batches", batches)
	}
}

// TestErrorTextOptIn: what a failure said (a call's error, a skill load's
// error, an approval decision's note) is recorded only with WithErrorText
// or WithContent; without them a failed span has status Error, no
// description, and error.type.
func TestErrorTextOptIn(t *testing.T) {
	const secret = "SECRET-CONTENT"
	for _, tc := range []struct {
		name string
		opts []telemetry.Option
		text bool
	}{
		{"default", nil, false},
		{"WithErrorText", []telemetry.Option{telemetry.WithErrorText()}, true},
		{"WithContent", []telemetry.Option{telemetry.WithContent()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts)
			perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll),
				interceptors.WithRules(interceptors.Rule{Tool: "rm", Decision: interceptors.Ask}))
			r.tk.Use(perms.Interceptor())
			testutil.Add(t, r.tk,
				tool(t, toolkit.Spec{Name: "fail"}, func(context.Context, struct{}) (string, error) {
					return "", errors.New("cannot read " + secret)
				}),
				tool(t, toolkit.Spec{Name: "rm"}, func(context.Context, struct{}) (string, error) { return "gone", nil }))
			lib, err := skills.NewLibrary(skills.Repository{Name: "mine", FS: fstest.MapFS{
				"stats/SKILL.md": {Data: []byte("---\nname: stats\ndescription: Summarise numbers.\n---\nCall mean.\n")},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := skills.Install(r.tk, lib); err != nil {
				t.Fatal(err)
			}
			sess := testutil.Session(t, r.tk, "s")
			b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c3", "rm", `{}`)})
			for deadline := time.Now().Add(5 * time.Second); len(perms.Pending("s")) == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no approval request")
				}
			}
			if err := perms.Reject("s", "c3", "not with "+secret); err != nil {
				t.Fatal(err)
			}
			b.Wait()
			sess.Run(context.Background(), []toolkit.Call{
				testutil.Call("c1", "fail", `{}`),
				testutil.Call("c2", "load_skill_through_path", `{"skillId":"stats","path":"`+secret+`.md"}`),
			})

			call, load := r.span(t, "execute_tool fail"), r.span(t, "load_skill stats")
			for _, s := range []tracetest.SpanStub{call, load} {
				if s.Status.Code != codes.Error || attrs(s)[semconv.ErrorType].AsString() != "error" {
					t.Errorf("%s: status %+v, error.type %v", s.Name, s.Status, attrs(s)[semconv.ErrorType])
				}
				if got := strings.Contains(s.Status.Description, secret); got != tc.text {
					t.Errorf("%s: description %q", s.Name, s.Status.Description)
				}
				if !tc.text && s.Status.Description != "" {
					t.Errorf("%s: description %q without WithErrorText", s.Name, s.Status.Description)
				}
			}
			note := false
			for _, e := range r.span(t, "execute_tool rm").Events {
				for _, a := range e.Attributes {
					if a.Key == semconv.ApprovalNote {
						note = strings.Contains(a.Value.AsString(), secret)
					}
				}
			}
			if note != tc.text {
				t.Errorf("approval note recorded: %v, want %v", note, tc.text)
			}
		})
	}
}

// TestBatchErrorTextOptIn: a batch aborted by a failure (interceptors'
// ErrorPolicy with Fatal) has that failure's error as Batch.Err, and a
// tool's error may quote its input or data: the batch span's status
// description says it only with WithErrorText (or WithContent), as the
// call span's does. A batch cancelled by its context still says
// "context canceled", which quotes nothing.
func TestBatchErrorTextOptIn(t *testing.T) {
	const secret = "SECRET-CONTENT"
	for _, tc := range []struct {
		name string
		opts []telemetry.Option
		text bool
	}{
		{"default", nil, false},
		{"WithErrorText", []telemetry.Option{telemetry.WithErrorText()}, true},
		{"WithContent", []telemetry.Option{telemetry.WithContent()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts)
			r.tk.Use(interceptors.ErrorPolicy(interceptors.Fatal(func(error) bool { return true })))
			release := make(chan struct{})
			testutil.Add(t, r.tk,
				tool(t, toolkit.Spec{Name: "fail"}, func(context.Context, struct{}) (string, error) {
					return "", errors.New("cannot read " + secret)
				}),
				tool(t, toolkit.Spec{Name: "wait"}, func(ctx context.Context, in struct{}) (string, error) {
					close(release)
					<-ctx.Done()
					return "", ctx.Err()
				}))
			testutil.Run(t, r.tk, "s", testutil.Call("c1", "fail", `{}`))
			sess := testutil.Session(t, r.tk, "s2")
			b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c2", "wait", `{}`)})
			<-release
			b.Cancel()
			b.Wait()
			batches, cancelled := 0, 0
			defer func() {
				if batches != 2 || cancelled != 1 {
					t.Errorf("%d batch spans, %d cancelled", batches, cancelled)
				}
			}()
			for _, s := range r.exp.GetSpans() {
				if s.Name != semconv.BatchSpan {
					continue
				}
				batches++
				if s.Status.Code != codes.Error || attrs(s)[semconv.ErrorType].AsString() != "interrupted" {
					t.Errorf("batch %s: status %+v, error.type %v", batchID(t, s), s.Status, attrs(s)[semconv.ErrorType])
				}
				switch d := s.Status.Description; {
				case strings.HasSuffix(batchID(t, s), "-2"):
					cancelled++
					if d != "context canceled" {
						t.Errorf("the cancelled batch's description: %q", d)
					}
				case strings.Contains(d, secret) != tc.text || !tc.text && d != "":
					t.Errorf("the aborted batch's description: %q", d)
				}
			}
		})
	}
}

// TestRecordedTextIsUTF8: what a call's span records of its content (with
// WithContent: arguments, result, error text) is valid UTF-8 even when the
// tool wrote bytes that are not (a command's Latin-1 output, an error that
// quotes a Latin-1 file name). OTLP carries attributes and status
// descriptions as protobuf strings, which must be UTF-8: the Go exporter
// fails to marshal a batch holding one that is not, and every span of the
// batch is lost.
func TestRecordedTextIsUTF8(t *testing.T) {
	r := newRig(t, []telemetry.Option{telemetry.WithContent()})
	testutil.Add(t, r.tk,
		tool(t, toolkit.Spec{Name: "cat"}, func(ctx context.Context, in pathIn) (string, error) {
			return "caf\xe9 cr\xe8me", nil
		}),
		tool(t, toolkit.Spec{Name: "open"}, func(ctx context.Context, in pathIn) (string, error) {
			return "", errors.New("open /data/caf\xe9.txt: no such file")
		}))
	testutil.Run(t, r.tk, "s", testutil.Call("c1", "cat", "{\"path\":\"caf\xe9.txt\"}"), // Latin-1 arguments
		testutil.Call("c2", "open", `{"path":"b.txt"}`),
		testutil.Call("c3", "caf\xe9", `{}`)) // an unknown tool, named in Latin-1
	if spans := r.exp.GetSpans(); len(spans) < 3 {
		t.Fatalf("spans %v", names(spans))
	}
	checkUTF8(t, r.exp.GetSpans())
	a := attrs(r.span(t, "execute_tool cat"))
	if got := a[semconv.ToolResult].AsString(); got != "caf\ufffd cr\ufffdme" {
		t.Errorf("result %q", got)
	}
	if got := a[semconv.ToolArguments].AsString(); got != "{\"path\":\"caf\ufffd.txt\"}" {
		t.Errorf("arguments %q", got)
	}
}

// checkUTF8 holds every string the spans record to UTF-8: names, status
// descriptions, attributes and events' attributes.
func checkUTF8(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	check := func(s tracetest.SpanStub, what, v string) {
		if !utf8.ValidString(v) {
			t.Errorf("%s: %s %q is not UTF-8", s.Name, what, v)
		}
	}
	for _, s := range spans {
		check(s, "name", s.Name)
		check(s, "status description", s.Status.Description)
		for _, kv := range s.Attributes {
			check(s, string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events {
			for _, kv := range e.Attributes {
				check(s, e.Name+" "+string(kv.Key), kv.Value.Emit())
			}
		}
	}
}

// TestApprovalTextIsUTF8: an approval whose rule's reason and whose
// rejection's note hold invalid UTF-8 (Latin-1), asked and decided through
// interceptors.Permissions, is recorded in UTF-8: the pending event's
// reason and the decision's note (WithContent) are there, valid, and what
// the approval events said.
func TestApprovalTextIsUTF8(t *testing.T) {
	var mu sync.Mutex
	var said []interceptors.ApprovalRequest // the approval events' data
	asked := make(chan struct{})
	var once sync.Once
	r := newRig(t, []telemetry.Option{telemetry.WithContent()}, toolkit.WithInlineObserver(toolkit.ObserverFunc(func(ev *events.Event) {
		if ev.Type != interceptors.ApprovalEvent {
			return
		}
		var req interceptors.ApprovalRequest
		_ = json.Unmarshal(ev.Data, &req)
		mu.Lock()
		said = append(said, req)
		mu.Unlock()
		once.Do(func() { close(asked) })
	})))
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.AllowAll),
		interceptors.WithRules(interceptors.Rule{Tool: "write", Decision: interceptors.Ask, Reason: "writes to caf\xe9/"}))
	r.tk.Use(perms.Interceptor())
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "write"}, func(ctx context.Context, in pathIn) (string, error) {
		return "written", nil
	}))
	sess := testutil.Session(t, r.tk, "s")
	b := sess.Start(context.Background(), []toolkit.Call{testutil.Call("c1", "write", `{"path":"x"}`)})
	testutil.WaitFor(t, asked, "the approval request")
	if err := perms.Reject("s", "c1", "not in caf\xe9/, please"); err != nil {
		t.Fatal(err)
	}
	if rs := b.Wait(); rs[0].State != events.StateDenied {
		t.Fatalf("state %s: %v", rs[0].State, rs[0].Err)
	}
	spans := r.exp.GetSpans()
	checkUTF8(t, spans)
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 2 || said[0].Reason == "" || said[1].Note == "" {
		t.Fatalf("approval events: %+v", said)
	}
	var reason, note string
	for _, e := range r.span(t, "execute_tool write").Events {
		if e.Name != semconv.EventApproval {
			continue
		}
		for _, kv := range e.Attributes {
			switch kv.Key {
			case semconv.ApprovalReason:
				reason = kv.Value.AsString()
			case semconv.ApprovalNote:
				note = kv.Value.AsString()
			}
		}
	}
	if reason != said[0].Reason || !strings.Contains(reason, "caf") {
		t.Errorf("recorded reason %q, the request said %q", reason, said[0].Reason)
	}
	if note != said[1].Note || !strings.Contains(note, "please") {
		t.Errorf("recorded note %q, the decision said %q", note, said[1].Note)
	}
	t.Logf("reason %q, note %q", reason, note)
}

// TestApprovalTextIsUTF8Raw: approval events from another emitter than
// Permissions (an interceptor of the host's own), whose data hold bytes
// that are not UTF-8, are recorded with U+FFFD in their place.
func TestApprovalTextIsUTF8Raw(t *testing.T) {
	r := newRig(t, []telemetry.Option{telemetry.WithContent()})
	r.tk.Use(toolkit.Interceptor{Name: "asker", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		_ = inv.Emit(interceptors.ApprovalEvent, json.RawMessage("{\"status\":\"pending\",\"reason\":\"caf\xe9\"}"))
		_ = inv.Emit(interceptors.ApprovalEvent, json.RawMessage("{\"status\":\"approved\",\"note\":\"cr\xe8me\"}"))
		return next(ctx, inv)
	}})
	testutil.Add(t, r.tk, tool(t, toolkit.Spec{Name: "write"}, func(ctx context.Context, in pathIn) (string, error) {
		return "written", nil
	}))
	testutil.Run(t, r.tk, "s", testutil.Call("c1", "write", `{"path":"x"}`))
	s := r.span(t, "execute_tool write")
	checkUTF8(t, tracetest.SpanStubs{s})
	got := eventNames(s)
	if len(got) < 2 || got[0] != "toolstream.approval toolstream.approval.status=pending toolstream.approval.reason=caf\ufffd" ||
		got[1] != "toolstream.approval toolstream.approval.status=approved toolstream.approval.note=cr\ufffdme" {
		t.Errorf("events: %q", got)
	}
}
