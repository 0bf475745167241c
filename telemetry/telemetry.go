// Package telemetry traces and measures a toolkit's tool calls with
// OpenTelemetry, by the GenAI semantic conventions for tool execution.
//
// It is the toolkit's tracer: install it with toolkit.WithTracer.
//
//	tel, err := telemetry.New() // the global tracer and meter providers
//	tk := toolkit.New(toolkit.WithTracer(tel))
//
// Each call is a span named "execute_tool {gen_ai.tool.name}" (kind
// internal) with gen_ai.operation.name, gen_ai.tool.name,
// gen_ai.tool.call.id, gen_ai.tool.type, gen_ai.tool.description,
// gen_ai.conversation.id (the session) and, when it failed, error.type (the
// call's state: timeout, denied, interrupted, error). Its arguments and
// result are recorded only with [WithContent], and what a failure said (the
// error text the model reads) only with [WithErrorText]: they may be
// sensitive. A
// call's attempts (one event each: a retry shows as several), suspensions,
// approvals and reset deltas are events of its span; its batch is its
// parent span ("toolstream.batch"), a child of whatever span the context
// given to Session.Start or Run carries; reset_tools and skill loads have
// spans of their own under the call's. docs/observability.md maps every
// attribute, event and metric.
//
// Every event the toolkit emits for a traced call carries the span's W3C
// trace context (events.Event.Trace), which the NATS publisher sends as the
// traceparent and tracestate headers: a subscriber links an event to its
// span with [Link] or continues the trace with [ContextWithTrace].
//
// Metrics: gen_ai.execute_tool.duration (per tool and state),
// toolstream.calls.active, toolstream.approval.wait, and, from the sources
// given to [Telemetry.WatchToolkit] and [Telemetry.WatchDelivery],
// toolstream.progress.dropped and toolstream.events.undelivered.
//
// With no tracer or meter provider set (the global ones left as they are,
// or no-op providers), a batch costs one check that there is nothing to
// record (tens of nanoseconds) and its calls no allocation more than
// without telemetry; the engine itself never imports OpenTelemetry
// (docs/benchmarks.md has the figures).
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/tracehook"
	"github.com/toolstream/toolstream/telemetry/internal/semconv"
	"github.com/toolstream/toolstream/toolkit"
)

// Option configures [New].
type Option func(*config)

type config struct {
	tp       trace.TracerProvider
	mp       metric.MeterProvider
	content  bool
	errText  bool
	toolType func(*toolkit.Tool) string
}

// WithTracerProvider sets the tracer provider (default: the global one,
// otel.GetTracerProvider, read at every batch so that one set later counts).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets the meter provider (default: the global one; its
// instruments follow a provider set later, as OpenTelemetry's global
// instruments do).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithContent records each call's arguments (gen_ai.tool.call.arguments,
// as the model sent them) and result (gen_ai.tool.call.result, the
// model-visible content as text), and everything [WithErrorText] records.
// Off by default: they may be sensitive.
func WithContent() Option { return func(c *config) { c.content, c.errText = true, true } }

// WithErrorText records what a failure said: a failed call's error (the
// text the model reads, as the span status description), a failed
// reset_tools or skill load's error, and the note of an approval decision.
// Off by default, as a tool's error may quote its input or its data: a
// failed span then has status Error with no description, and error.type
// says how it failed. [WithContent] turns it on too.
func WithErrorText() Option { return func(c *config) { c.errText = true } }

// WithToolType sets how a tool's gen_ai.tool.type is chosen (the
// conventions' "function", "extension" or "datastore"). By default every
// tool is a "function": the application runs it for the model. The tool is
// nil for a call of an unknown tool.
func WithToolType(f func(t *toolkit.Tool) string) Option {
	return func(c *config) { c.toolType = f }
}

// Telemetry traces and measures a toolkit's calls (toolkit.WithTracer).
// One value may serve several toolkits.
type Telemetry struct {
	cfg    config
	tracer atomic.Pointer[tracerState]
	quiet  atomic.Pointer[quietState] // the providers last found to record nothing
	last   atomic.Pointer[lastTrace]  // what TraceContext built last

	duration     metric.Float64Histogram
	active       metric.Int64UpDownCounter
	approvalWait metric.Float64Histogram

	mu       sync.Mutex
	toolkits []*toolkit.Toolkit
	sinks    []sink
}

type sink struct {
	name string
	f    func() Delivery
}

// Delivery counts what a destination of events lost: the NATS publisher's
// natsbus.PublisherStats say it.
type Delivery struct {
	DroppedProgress uint64
	Undelivered     uint64
}

var _ tracehook.Source[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] = (*Telemetry)(nil)

// Tracehook is what toolkit.WithTracer takes from a Telemetry: the engine's
// tracing hook, internal to the module. A nil Telemetry traces nothing.
func (t *Telemetry) Tracehook() tracehook.Tracer[*toolkit.Batch, toolkit.CallInfo, *toolkit.Tool] {
	if t == nil {
		return nil
	}
	return hook{t}
}

// hook is a Telemetry as the engine sees it: its methods are the hook's.
type hook struct{ t *Telemetry }

// New returns a Telemetry. It fails only if the meter provider refuses an
// instrument.
func New(opts ...Option) (*Telemetry, error) {
	t := &Telemetry{}
	for _, o := range opts {
		o(&t.cfg)
	}
	mp := t.cfg.mp
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(semconv.ScopeName)
	var errs []error
	var err error
	t.duration, err = m.Float64Histogram(semconv.MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls, from their start to their result."),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
	errs = append(errs, err)
	t.active, err = m.Int64UpDownCounter(semconv.MetricActive, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls started and not yet finished."))
	errs = append(errs, err)
	t.approvalWait, err = m.Float64Histogram(semconv.MetricApprovalWait, metric.WithUnit("s"),
		metric.WithDescription("Time a call or batch waited for a person's decision."),
		metric.WithExplicitBucketBoundaries(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600))
	errs = append(errs, err)
	dropped, err := m.Int64ObservableCounter(semconv.MetricDropped, metric.WithUnit("{event}"),
		metric.WithDescription("Progress events dropped because an observer or a publisher was behind."))
	errs = append(errs, err)
	undelivered, err := m.Int64ObservableCounter(semconv.MetricUndelivered, metric.WithUnit("{event}"),
		metric.WithDescription("Events given up on by a publisher (NATS refused them for good, or they could not fit a message)."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.mu.Lock()
		tks, sinks := t.toolkits, t.sinks
		t.mu.Unlock()
		var fromToolkits uint64
		for _, tk := range tks {
			fromToolkits += tk.Stats().DroppedProgress
		}
		if len(tks) > 0 {
			o.ObserveInt64(dropped, int64(fromToolkits), metric.WithAttributes(semconv.Source.String("observers")))
		}
		for _, s := range sinks {
			d := s.f()
			o.ObserveInt64(dropped, int64(d.DroppedProgress), metric.WithAttributes(semconv.Source.String(s.name)))
			o.ObserveInt64(undelivered, int64(d.Undelivered), metric.WithAttributes(semconv.Destination.String(s.name)))
		}
		return nil
	}, dropped, undelivered)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// WatchToolkit counts the progress events tk dropped for its slow
// asynchronous observers in toolstream.progress.dropped
// (toolstream.source "observers").
func (t *Telemetry) WatchToolkit(tk *toolkit.Toolkit) {
	t.mu.Lock()
	t.toolkits = append(t.toolkits[:len(t.toolkits):len(t.toolkits)], tk)
	t.mu.Unlock()
}

// WatchDelivery counts what a destination of events lost, as f reports
// it, in toolstream.progress.dropped (toolstream.source name) and
// toolstream.events.undelivered (toolstream.destination name). For the
// NATS publisher:
//
//	tel.WatchDelivery("nats", func() telemetry.Delivery {
//		s := bus.Publisher().Stats()
//		return telemetry.Delivery{DroppedProgress: s.DroppedProgress, Undelivered: s.Undelivered}
//	})
func (t *Telemetry) WatchDelivery(name string, f func() Delivery) {
	t.mu.Lock()
	t.sinks = append(t.sinks[:len(t.sinks):len(t.sinks)], sink{name, f})
	t.mu.Unlock()
}

// tracerState caches the tracer of the provider in use; tracer is nil when
// that provider records nothing.
type tracerState struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
}

// tracerNow returns the tracer to use now, or nil when no tracer provider
// is set: the global one without a delegate, or a no-op one. It costs an
// atomic load and a comparison while the provider does not change.
func (t *Telemetry) tracerNow() trace.Tracer {
	tp := t.cfg.tp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if s := t.tracer.Load(); s != nil && sameWords(s.tp, tp) {
		return s.tracer
	}
	s := &tracerState{tp: tp}
	if !noopProvider(reflect.TypeOf(tp)) {
		s.tracer = tp.Tracer(semconv.ScopeName)
	}
	t.tracer.Store(s)
	return s.tracer
}

// noopProvider reports whether a tracer provider of this type records
// nothing: OpenTelemetry's global provider before one is set, or a no-op
// provider.
func noopProvider(typ reflect.Type) bool {
	if typ == nil {
		return true
	}
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.PkgPath() + "." + typ.Name() {
	case "go.opentelemetry.io/otel/internal/global.tracerProvider",
		"go.opentelemetry.io/otel/trace/noop.TracerProvider",
		"go.opentelemetry.io/otel/trace.noopTracerProvider":
		return true
	}
	return false
}

// measuring reports whether call metrics are recorded (the approval wait
// is recorded when its instrument takes it).
func (t *Telemetry) measuring(ctx context.Context) bool {
	return t.duration.Enabled(ctx) || t.active.Enabled(ctx)
}

// quietState is a pair of providers that record nothing.
type quietState struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// providers returns the providers in force: the configured ones, else the
// global ones, which change identity when a program sets them.
func (t *Telemetry) providers() (trace.TracerProvider, metric.MeterProvider) {
	tp, mp := t.cfg.tp, t.cfg.mp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return tp, mp
}

// StartBatch implements the engine's tracing hook: the batch's span.
func (h hook) StartBatch(ctx context.Context, b *toolkit.Batch, calls int) (context.Context, tracehook.BatchTrace) {
	t := h.t
	if t.quietNow() {
		return ctx, nil
	}
	return t.startBatch(ctx, b, calls)
}

// quietNow reports whether the providers in force are the two that
// recorded nothing last time, known by identity (a comparison each) rather
// than asked again: the common case without providers. A configured
// provider never changes, so only the global ones are looked up.
func (t *Telemetry) quietNow() bool {
	q := t.quiet.Load()
	return q != nil &&
		(t.cfg.tp != nil || sameWords(otel.GetTracerProvider(), q.tp)) &&
		(t.cfg.mp != nil || sameWords(otel.GetMeterProvider(), q.mp))
}

// sameWords reports whether interface values a and b hold the same dynamic
// type and the same data word: the same provider. It implies a == b, and
// for the pointers providers are it is a == b, without the runtime call
// that == makes (a third of a quiet batch's cost) and without the panic ==
// raises on a provider of an incomparable type (a value whose box is
// another is taken for another provider: one more look, not an error).
func sameWords[T any](a, b T) bool {
	x, y := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1]
}

// startBatch is StartBatch once the providers may record something.
func (t *Telemetry) startBatch(ctx context.Context, b *toolkit.Batch, calls int) (context.Context, tracehook.BatchTrace) {
	tp, mp := t.providers()
	tr := t.tracerNow()
	measuring := t.measuring(ctx)
	if tr == nil && !measuring {
		t.quiet.Store(&quietState{tp: tp, mp: mp})
		return ctx, nil
	}
	bt := &batchTrace{t: t, b: b, tracer: tr, measuring: measuring}
	if tr != nil {
		attrs := []attribute.KeyValue{
			semconv.BatchID.String(b.ID()),
			semconv.ConversationID.String(b.Session().ID()),
			semconv.BatchSize.Int(calls),
		}
		if a := toolkit.Agent(ctx); a != "" {
			attrs = append(attrs, semconv.AgentID.String(a))
		}
		ctx, bt.span = tr.Start(ctx, semconv.BatchSpan, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		bt.parent, bt.state = traceHeaders(bt.span.SpanContext())
	}
	return ctx, bt
}

// StartCall implements the engine's tracing hook: the call's span.
// The batch decided whether to trace and measure (StartBatch): its calls
// follow.
func (h hook) StartCall(ctx context.Context, b tracehook.BatchTrace, c toolkit.CallInfo, tool *toolkit.Tool) (context.Context, tracehook.CallTrace) {
	t := h.t
	bt, ok := b.(*batchTrace)
	if !ok {
		return ctx, nil
	}
	tr, measuring := bt.tracer, bt.measuring
	name := utf8Text(c.Tool) // a name the model made up, for an unknown tool
	ct := &callTrace{t: t, tool: name, measuring: measuring}
	if tr != nil {
		typ := "function"
		if t.cfg.toolType != nil {
			typ = t.cfg.toolType(tool)
		}
		attrs := make([]attribute.KeyValue, 0, 7)
		attrs = append(attrs,
			semconv.OperationName.String(semconv.OperationExecuteTool),
			semconv.ToolName.String(name),
			semconv.ToolCallID.String(c.CallID),
			semconv.ToolType.String(typ),
			semconv.ConversationID.String(c.Session))
		if tool != nil {
			if d := tool.Spec().Description; d != "" {
				attrs = append(attrs, semconv.ToolDescription.String(d))
			}
		}
		if c.Agent != "" {
			attrs = append(attrs, semconv.AgentID.String(c.Agent))
		}
		ctx, ct.span = tr.Start(ctx, semconv.OperationExecuteTool+" "+name,
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		ct.parent, ct.state = traceHeaders(ct.span.SpanContext())
	}
	return ctx, ct
}

// StartOp implements the engine's tracing hook: a span for work inside a call
// (reset_tools, a skill load).
func (h hook) StartOp(ctx context.Context, name string) (context.Context, tracehook.OpTrace) {
	t := h.t
	tr := t.tracerNow()
	if tr == nil {
		return ctx, nil
	}
	ctx, span := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	return ctx, opTrace{span, t}
}

// traceHeaders returns the W3C traceparent and tracestate of a span.
// TraceContext implements the engine's tracing hook: the span ctx carries, for
// session-level events sent outside a call (Session.Emit).
func (h hook) TraceContext(ctx context.Context) events.Trace {
	t := h.t
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	if l := t.last.Load(); l != nil && l.sc.Equal(sc) {
		return l.tc
	}
	parent, state := traceHeaders(sc)
	l := &lastTrace{sc: sc, tc: events.TraceContext{Parent: parent, State: state}}
	t.last.Store(l)
	return l.tc
}

// lastTrace is a span's trace context as TraceContext built it last. An
// agent loop asks for each piece of a turn it streams, with the same span
// every time: the headers are built once, not per piece.
type lastTrace struct {
	sc trace.SpanContext
	tc events.Trace
}

func traceHeaders(sc trace.SpanContext) (parent, state string) {
	if !sc.IsValid() {
		return "", ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(), sc.TraceState().String()
}

// callTrace is one call's span and measures.
type callTrace struct {
	t             *Telemetry
	span          trace.Span // nil when not tracing
	parent, state string
	tool          string
	measuring     bool
	begun         bool      // counted in toolstream.calls.active
	asked         time.Time // when an approval request went out
}

func (c *callTrace) TraceParent() string { return c.parent }
func (c *callTrace) TraceState() string  { return c.state }

// Attempt records one event per attempt of the tool.
func (c *callTrace) Attempt(n int) {
	if c.span != nil {
		c.span.AddEvent(semconv.EventAttempt, trace.WithAttributes(semconv.Attempt.Int(n)))
	}
}

// Observe turns the call's events into span events, attributes and
// measures.
func (c *callTrace) Observe(ev *events.Event) {
	switch ev.Type {
	case events.TypeStart:
		if c.measuring {
			c.begun = true
			c.t.active.Add(context.Background(), 1, metric.WithAttributes(semconv.ToolName.String(c.tool)))
		}
		if c.span != nil && c.t.cfg.content && ev.Start != nil {
			c.span.SetAttributes(semconv.ToolArguments.String(utf8Text(string(ev.Start.Args))))
		}
	case events.TypeSuspend:
		if c.span != nil && ev.Suspend != nil {
			c.span.AddEvent(semconv.EventSuspend, trace.WithTimestamp(ev.Time), trace.WithAttributes(semconv.SuspendReason.String(ev.Suspend.Reason)))
		}
	case events.TypeDelta:
		if c.span != nil && ev.Reset {
			c.span.AddEvent(semconv.EventReset, trace.WithTimestamp(ev.Time))
		}
	case events.TypeProgress:
	case events.TypeResult:
		c.end(ev)
	case interceptors.ApprovalEvent:
		c.asked = approval(c.t, c.span, c.tool, c.asked, ev)
	default:
		if c.span != nil {
			c.span.AddEvent(semconv.EventOther, trace.WithTimestamp(ev.Time), trace.WithAttributes(semconv.EventType.String(string(ev.Type))))
		}
	}
}

// end records the result: the duration, the state, the span's end.
func (c *callTrace) end(ev *events.Event) {
	r := ev.Result
	if r == nil {
		return
	}
	failed := r.State != events.StateSuccess
	if c.measuring {
		if c.begun {
			c.t.active.Add(context.Background(), -1, metric.WithAttributes(semconv.ToolName.String(c.tool)))
		}
		attrs := []attribute.KeyValue{semconv.OperationName.String(semconv.OperationExecuteTool), semconv.ToolName.String(c.tool), semconv.CallState.String(string(r.State))}
		if failed {
			attrs = append(attrs, semconv.ErrorType.String(string(r.State)))
		}
		c.t.duration.Record(context.Background(), r.DurationMS/1000, metric.WithAttributes(attrs...))
	}
	if c.span == nil {
		return
	}
	if failed {
		c.span.SetAttributes(semconv.ErrorType.String(string(r.State)))
		c.span.SetStatus(codes.Error, c.t.errorText(r.Error))
	}
	if c.t.cfg.content {
		c.span.SetAttributes(semconv.ToolResult.String(utf8Text(events.ContentText(r.Content))))
	}
	c.span.End(trace.WithTimestamp(ev.Time))
}

// errorText is a failed call's or operation's status description: its
// error with WithErrorText, none without.
func (t *Telemetry) errorText(err string) string {
	if t.cfg.errText {
		return utf8Text(err)
	}
	return ""
}

// utf8Text is s with each run of invalid UTF-8 as U+FFFD. What a span
// records of a tool's content or error may hold bytes that are not UTF-8 (a
// command's Latin-1 output), and OTLP carries strings as protobuf strings,
// which must be UTF-8: the exporter fails to marshal a batch holding one
// that is not, and loses every span of it.
func utf8Text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// approval records an approval event (interceptors.Permissions): the
// request and the decision as span events, and the wait between them. It
// returns when the pending request went out (zero once decided).
func approval(t *Telemetry, span trace.Span, tool string, asked time.Time, ev *events.Event) time.Time {
	var req struct {
		Status string `json:"status"`
		Note   string `json:"note"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(ev.Data, &req) != nil {
		return asked
	}
	if span != nil {
		attrs := []attribute.KeyValue{semconv.ApprovalStatus.String(req.Status)}
		if req.Reason != "" && req.Status == "pending" {
			attrs = append(attrs, semconv.ApprovalReason.String(utf8Text(req.Reason)))
		}
		if req.Note != "" && t.cfg.errText {
			attrs = append(attrs, semconv.ApprovalNote.String(utf8Text(req.Note)))
		}
		span.AddEvent(semconv.EventApproval, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
	}
	if req.Status == "pending" {
		return ev.Time
	}
	if !asked.IsZero() {
		attrs := []attribute.KeyValue{semconv.ApprovalStatus.String(req.Status)}
		if tool != "" {
			attrs = append(attrs, semconv.ToolName.String(tool))
		}
		t.approvalWait.Record(context.Background(), ev.Time.Sub(asked).Seconds(), metric.WithAttributes(attrs...))
	}
	return time.Time{}
}

// batchTrace is one batch's span.
type batchTrace struct {
	t             *Telemetry
	b             *toolkit.Batch
	tracer        trace.Tracer // nil when not tracing
	measuring     bool
	span          trace.Span // nil when not tracing
	parent, state string
	asked         time.Time
}

func (bt *batchTrace) TraceParent() string { return bt.parent }
func (bt *batchTrace) TraceState() string  { return bt.state }

// Observe records the batch's approval (interceptors.BatchApproval).
func (bt *batchTrace) Observe(ev *events.Event) {
	if ev.Type == interceptors.ApprovalEvent {
		bt.asked = approval(bt.t, bt.span, "", bt.asked, ev)
	}
}

// End ends the batch's span with what became of its calls.
func (bt *batchTrace) End(failed int) {
	if bt.span == nil {
		return
	}
	attrs := []attribute.KeyValue{semconv.BatchFailed.Int(failed)}
	if s, ok := bt.b.Stop(); ok {
		attrs = append(attrs, semconv.BatchStop.String(string(s.Reason)))
	}
	bt.span.SetAttributes(attrs...)
	if err := bt.b.Err(); err != nil {
		bt.span.SetAttributes(semconv.ErrorType.String(string(events.StateInterrupted)))
		// The cause may be a call's failure that aborted the batch
		// (interceptors' ErrorPolicy with Fatal): its error, which may quote
		// the tool's input or data, is said only with WithErrorText, as on
		// the call's span. A cancelled context says nothing of the kind.
		desc := bt.t.errorText(err.Error())
		if err == context.Canceled || err == context.DeadlineExceeded {
			desc = err.Error()
		}
		bt.span.SetStatus(codes.Error, desc)
	}
	bt.span.End()
}

// opTrace is an operation's span.
type opTrace struct {
	span trace.Span
	t    *Telemetry // its errorText: the error may quote the model's arguments
}

func (o opTrace) SetAttr(key string, value any) {
	k := attribute.Key(key)
	switch v := value.(type) {
	case string:
		o.span.SetAttributes(k.String(v))
	case []string:
		o.span.SetAttributes(k.StringSlice(v))
	case bool:
		o.span.SetAttributes(k.Bool(v))
	case int:
		o.span.SetAttributes(k.Int(v))
	}
}

func (o opTrace) End(err error) {
	if err != nil {
		o.span.SetAttributes(semconv.ErrorType.String("error"))
		o.span.SetStatus(codes.Error, o.t.errorText(err.Error()))
	}
	o.span.End()
}

// ContextWithTrace returns ctx carrying the remote span of a trace context
// read from elsewhere (an event's Trace, a request's headers): spans started
// with it join that trace as its children. A remote worker continues the
// caller's trace this way. It returns ctx unchanged when tr is nil or not a
// valid traceparent.
func ContextWithTrace(ctx context.Context, tr events.Trace) context.Context {
	if tr == nil {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": tr.TraceParent()}
	if s := tr.TraceState(); s != "" {
		carrier["tracestate"] = s
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// Link returns a link to the span an event belongs to (from its Trace), for
// a span of a subscriber that handles the event; ok is false when the event
// carries no valid trace context.
func Link(ev *events.Event) (link trace.Link, ok bool) {
	sc := trace.SpanContextFromContext(ContextWithTrace(context.Background(), ev.Trace))
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc}, true
}
