package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/telemetry"
	"github.com/toolstream/toolstream/toolkit"
)

// The tour's traces: -otel stderr prints each span as one line of JSON
// (the SDK's stdout exporter) on the demo's stderr, -otel file:PATH in a
// file, so that the tour's own lines on stdout never mix with them (-otel
// stdout, the old name, is stderr now); -otel otlp, or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) alone, sends them
// over OTLP/HTTP wherever the OTEL_* variables say (docs/observability.md).

// otelModes are the values of -otel (and file:PATH).
var otelModes = []string{"none", "stderr", "stdout", "otlp"}

// otelFlag adds -otel to fs. Its default follows the standard variables:
// OTEL_TRACES_EXPORTER (console, otlp, none), else otlp when an OTLP
// endpoint is set, else none.
func otelFlag(fs *flag.FlagSet, c *config) {
	c.otel = otelDefault()
	fs.Func("otel", "trace the tour with OpenTelemetry: stderr (spans as JSON lines on stderr, apart from the tour's lines on stdout; implies -plain), file:PATH (JSON lines in that file), otlp (OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables) or none; stdout is the old name of stderr (default: otlp when an OTLP endpoint is set, else none)", func(v string) error {
		if path, ok := strings.CutPrefix(v, "file:"); ok {
			if path == "" {
				return errors.New("file: needs a path, such as file:spans.jsonl")
			}
			c.otel, c.otelFile = "file", path
			return nil
		}
		for _, m := range otelModes {
			if v == m {
				if v == "stdout" {
					v = "stderr" // the spans no longer share stdout with the tour
				}
				c.otel = v
				if v == "stderr" {
					c.plain = true // on one terminal, the live block's redraws would cut through the spans
				}
				return nil
			}
		}
		return fmt.Errorf("want %s or file:PATH", strings.Join(otelModes, ", "))
	})
}

func otelDefault() string {
	switch os.Getenv("OTEL_TRACES_EXPORTER") {
	case "console":
		return "stderr"
	case "otlp":
		return "otlp"
	case "none":
		return "none"
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		return "otlp"
	}
	return "none"
}

// demoOtel is the tour's tracing: nothing when -otel is none.
type demoOtel struct {
	tp        *sdktrace.TracerProvider
	tel       *telemetry.Telemetry
	closeFile func() error // -otel file:PATH
}

// startOtel sets up the exporter -otel names: stderr spans are escaped as
// everything the demo prints on a terminal (JSON strings stay JSON), a
// file's are written as they are. The demo does not touch OpenTelemetry's
// global providers: the toolkit's telemetry gets its own.
func startOtel(ctx context.Context, mode, file string, stderr io.Writer) (_ *demoOtel, err error) {
	var exp sdktrace.SpanExporter
	var closeFile func() error
	defer func() {
		if err != nil && closeFile != nil {
			_ = closeFile()
		}
	}()
	switch mode {
	case "", "none":
		return &demoOtel{}, nil
	case "stderr":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(safeWriter{stderr}))
	case "file":
		f, ferr := os.Create(file)
		if ferr != nil {
			return nil, fmt.Errorf("-otel file:%s: %w", file, ferr)
		}
		closeFile = f.Close
		exp, err = stdouttrace.New(stdouttrace.WithWriter(f))
	case "otlp":
		exp, err = otlptracehttp.New(ctx) // endpoint, headers, TLS from the OTEL_* variables
	}
	if err != nil {
		return nil, fmt.Errorf("-otel %s: %w", mode, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "toolstream-demo")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("-otel: %w", err)
	}
	var process sdktrace.TracerProviderOption
	if mode == "stderr" || mode == "file" {
		process = sdktrace.WithSyncer(exp) // each span written as it ends
	} else {
		process = sdktrace.WithBatcher(exp) // its goroutine starts here
	}
	tp := sdktrace.NewTracerProvider(process, sdktrace.WithResource(res))
	// The demo's failures quote nothing private: its spans say why a call
	// failed (a real deployment decides; see telemetry.WithErrorText).
	tel, err := telemetry.New(telemetry.WithTracerProvider(tp), telemetry.WithErrorText())
	if err != nil {
		return nil, err
	}
	return &demoOtel{tp: tp, tel: tel, closeFile: closeFile}, nil
}

// options are the toolkit options of the tour's tracing.
func (o *demoOtel) options() []toolkit.Option {
	if o.tel == nil {
		return nil
	}
	return []toolkit.Option{toolkit.WithTracer(o.tel)}
}

// watch counts what the NATS publisher lost in the telemetry's metrics.
func (o *demoOtel) watch(tk *toolkit.Toolkit, bus *natsbus.Bus) {
	if o.tel == nil {
		return
	}
	o.tel.WatchToolkit(tk)
	o.tel.WatchDelivery("nats", func() telemetry.Delivery {
		s := bus.Publisher().Stats()
		return telemetry.Delivery{DroppedProgress: s.DroppedProgress, Undelivered: s.Undelivered}
	})
}

// tour starts the span of the whole run, the parent of every batch's: one
// trace per tour. end ends it.
func (o *demoOtel) tour(ctx context.Context, session, model string) (_ context.Context, end func()) {
	if o.tp == nil {
		return ctx, func() {}
	}
	ctx, span := o.tp.Tracer("github.com/toolstream/toolstream/cmd/demo").Start(ctx, "invoke_agent toolstream-demo",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "toolstream-demo"),
			attribute.String("gen_ai.request.model", model),
			attribute.String("gen_ai.conversation.id", session)))
	return ctx, func() { span.End() }
}

// shutdown sends the spans still buffered, within 5 s.
func (o *demoOtel) shutdown() {
	if o.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.tp.Shutdown(ctx)
	if o.closeFile != nil {
		_ = o.closeFile()
	}
}
