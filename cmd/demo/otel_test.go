package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// stdoutSpan is what the SDK's stdout exporter prints of a span, as far as
// the test reads it.
type stdoutSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
	Events []struct {
		Name       string
		Attributes []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	Status struct{ Code string }
}

func (s stdoutSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return fmt.Sprint(a.Value.Value)
		}
	}
	return ""
}

func (s stdoutSpan) events() []string {
	var out []string
	for _, e := range s.Events {
		n := e.Name
		for _, a := range e.Attributes {
			if a.Key != "toolstream.approval.reason" {
				n += fmt.Sprintf(" %s=%v", a.Key, a.Value.Value)
			}
		}
		out = append(out, n)
	}
	return out
}

// TestOtelStdout runs the tour with -otel stdout (the old name of stderr)
// and reads its spans: one trace, the tour's span over one span per batch
// over one span per call, with the retry's attempts, the approval, the
// interruption, reset_tools and the skill load where they happened. The
// spans are on stderr, every line of it one span's JSON (`2>&1 >/dev/null
// | jq` reads them), and none on stdout with the tour's lines: there,
// `| jq` failed on the first line of the tour.
func TestOtelStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once", "-session", "tour", "-otel", "stdout"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	if strings.Contains(out.String(), `{"Name":`) {
		t.Errorf("spans on stdout, among the tour's lines")
	}
	var spans []stdoutSpan
	for _, line := range strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n") {
		var s stdoutSpan
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("a span that is not JSON: %v\n%s", err, line)
		}
		spans = append(spans, s)
	}
	if !strings.Contains(out.String(), "=== Summary: 6 turns, 13 calls") {
		t.Errorf("the tour did not run as usual:\n%s", out.String())
	}
	byName := map[string][]stdoutSpan{}
	ids := map[string]stdoutSpan{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		ids[s.SpanContext.SpanID] = s
	}
	tours := byName["invoke_agent toolstream-demo"]
	if len(tours) != 1 {
		t.Fatalf("%d tour spans; spans: %d", len(tours), len(spans))
	}
	tour := tours[0]
	if got := len(byName["toolstream.batch"]); got != 5 {
		t.Errorf("%d batch spans, want 5 (one per turn that calls tools: the sixth answers)", got)
	}
	calls := 0
	for _, s := range spans {
		if s.SpanContext.TraceID != tour.SpanContext.TraceID {
			t.Errorf("%s is in another trace", s.Name)
		}
		switch {
		case s.Name == "toolstream.batch":
			if s.Parent.SpanID != tour.SpanContext.SpanID {
				t.Errorf("a batch's parent is not the tour")
			}
		case strings.HasPrefix(s.Name, "execute_tool "):
			calls++
			if ids[s.Parent.SpanID].Name != "toolstream.batch" {
				t.Errorf("%s: parent %q, want a batch", s.Name, ids[s.Parent.SpanID].Name)
			}
			if s.attr("gen_ai.operation.name") != "execute_tool" || "execute_tool "+s.attr("gen_ai.tool.name") != s.Name ||
				s.attr("gen_ai.conversation.id") != "tour" || s.attr("gen_ai.tool.call.id") == "" {
				t.Errorf("%s: attributes %+v", s.Name, s.Attributes)
			}
		}
	}
	if calls != 13 {
		t.Errorf("%d call spans, want 13", calls)
	}
	one := func(name string) stdoutSpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans %q", len(byName[name]), name)
		}
		return byName[name][0]
	}
	if got := one("execute_tool folder_stats").events(); !slices.Equal(got, []string{
		"toolstream.attempt toolstream.attempt=1", "toolstream.reset",
		"toolstream.attempt toolstream.attempt=2", "toolstream.reset",
		"toolstream.attempt toolstream.attempt=3"}) {
		t.Errorf("folder_stats (retried): %q", got)
	}
	if got := one("execute_tool write_note").events(); !slices.Equal(got, []string{
		"toolstream.suspend toolstream.suspend.reason=approval",
		"toolstream.approval toolstream.approval.status=pending",
		"toolstream.approval toolstream.approval.status=approved toolstream.approval.note=arguments edited",
		"toolstream.attempt toolstream.attempt=1",
		"toolstream.event toolstream.event.type=args"}) { // the person edited the arguments: the args event records what ran
		t.Errorf("write_note (approved): %q", got)
	}
	if w := one("execute_tool watch_folder"); w.attr("error.type") != "interrupted" || w.Status.Code != "Error" {
		t.Errorf("watch_folder (stopped): error.type %q, status %q", w.attr("error.type"), w.Status.Code)
	}
	if r := one("reset_tools"); ids[r.Parent.SpanID].Name != "execute_tool reset_tools" || r.attr("toolstream.groups.activated") != "[notes]" {
		t.Errorf("reset_tools: parent %q, activated %q", ids[r.Parent.SpanID].Name, r.attr("toolstream.groups.activated"))
	}
	if l := one("load_skill file-analysis"); ids[l.Parent.SpanID].Name != "execute_tool load_skill_through_path" {
		t.Errorf("the skill load's parent: %q", ids[l.Parent.SpanID].Name)
	}
}

// TestOtelFlag: -otel takes none, stderr (stdout, its old name), otlp or
// file:PATH, and nothing else.
func TestOtelFlag(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-otel", "jaeger"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "want none, stderr, stdout, otlp or file:PATH") {
		t.Errorf("-otel jaeger: %v", err)
	}
	c, err := parseFlags([]string{"-listen", ""}, strings.NewReader(""), &out)
	if err != nil || c.otel != "none" {
		t.Errorf("default without OTEL_* variables: %q %v", c.otel, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	if c, err := parseFlags([]string{"-listen", ""}, strings.NewReader(""), &out); err != nil || c.otel != "otlp" {
		t.Errorf("default with OTEL_EXPORTER_OTLP_ENDPOINT: %q %v", c.otel, err)
	}
}

// TestOtelOTLP: with only the standard OTEL_EXPORTER_OTLP_ENDPOINT set,
// the tour's spans arrive over OTLP/HTTP at that endpoint (a collector
// stand-in on loopback that decodes the protobuf requests).
func TestOtelOTLP(t *testing.T) {
	var mu sync.Mutex
	names := map[string]int{}
	services := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					services[a.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name]++
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "tour-under-test")

	var out, errOut bytes.Buffer
	args := []string{"-dir", "../..", "-listen", "", "-nats-listen", "", "-speed", "0", "-once", "-session", "tour"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	calls := 0
	for n, c := range names {
		if strings.HasPrefix(n, "execute_tool ") {
			calls += c
		}
	}
	if names["invoke_agent toolstream-demo"] != 1 || names["toolstream.batch"] != 5 || calls != 13 {
		t.Errorf("spans received: %v", names)
	}
	if !services["tour-under-test"] || len(services) != 1 {
		t.Errorf("service names %v, want OTEL_SERVICE_NAME's", services)
	}
}

// TestOtelFile: -otel file:PATH writes the spans, one JSON line each, in
// that file and nothing of them on stdout or stderr.
func TestOtelFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	var out, errOut bytes.Buffer
	args := []string{"-dir", ".", "-listen", "", "-nats-listen", "", "-speed", "0", "-once", "-max-turns", "2", "-otel", "file:" + path}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, errOut.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var s stdoutSpan
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("a line that is not a span: %v\n%s", err, line)
		}
		names[s.Name] = true
	}
	if !names["invoke_agent toolstream-demo"] || !names["execute_tool reset_tools"] {
		t.Errorf("spans: %v", names)
	}
	if strings.Contains(out.String()+errOut.String(), `{"Name":`) {
		t.Errorf("spans outside the file:\n%s\n%s", out.String(), errOut.String())
	}
	if _, err := parseFlags([]string{"-otel", "file:"}, strings.NewReader(""), &out); err == nil {
		t.Error("-otel file: with no path: no error")
	}
}
