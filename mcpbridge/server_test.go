package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

type srvWeatherIn struct {
	City string `json:"city" jsonschema:"the city"`
	Days int    `json:"days,omitempty" tool:"minimum=1,maximum=7,default=1"`
}

type srvWeatherOut struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

func srvPtr[T any](v T) *T { return &v }

// testTools are the tools the server tests serve: a typed read-only tool with
// an output schema, one that reports progress, one that runs until cancelled,
// and one without hints.
func srvTools(t testing.TB) []*toolkit.Tool {
	weather := toolkit.MustTool(toolkit.Spec{
		Name: "weather", Description: "Current weather in a city.", ReadOnly: true, Title: "Weather",
		ConcurrencySafe: true,
	}, func(ctx context.Context, in srvWeatherIn) (srvWeatherOut, error) {
		return srvWeatherOut{City: in.City, TempC: 21.5}, nil
	})
	steps, err := toolkit.NewRawTool(toolkit.Spec{
		Name: "steps", Description: "Reports progress, then answers.",
		Destructive: srvPtr(false), Idempotent: srvPtr(true), OpenWorld: srvPtr(false),
	}, json.RawMessage(`{"type":"object"}`), func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
		em := stream.From(ctx)
		for _, p := range []struct {
			msg string
			f   float64
		}{{"begin", -1}, {"a quarter", 0.25}, {"half", 0.5}, {"still half", 0.5}, {"went back", 0.4}, {"all", 1}} {
			em.Progress(p.msg, p.f)
			time.Sleep(2 * time.Millisecond) // room for each to go out
		}
		return []events.Part{events.Text("done")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := toolkit.NewRawTool(toolkit.Spec{Name: "slow", Description: "Runs until cancelled."},
		json.RawMessage(`{"type":"object"}`), func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
			stream.From(ctx).Progress("working", 0.1)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	noop := toolkit.MustTool(toolkit.Spec{Name: "noop", Description: "Does nothing."},
		func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
	return []*toolkit.Tool{weather, steps, slow, noop}
}

// results collects the toolkit's result events.
type srvResults struct {
	mu  sync.Mutex
	evs []*events.Event
	ch  chan *events.Event
}

func (r *srvResults) Observe(ev *events.Event) {
	if ev.Type != events.TypeResult {
		return
	}
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
	select {
	case r.ch <- ev:
	default:
	}
}

func srvToolkit(t testing.TB, opts ...toolkit.Option) *toolkit.Toolkit {
	tk := toolkit.New(opts...)
	if err := tk.Add(srvTools(t)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tk.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return tk
}

// connect serves s over an in-memory transport and returns a Go SDK client
// session; both end with the test.
func srvConnect(t testing.TB, s *mcpbridge.Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	return srvConnectVia(t, s, copts, version, nil)
}

// srvConnectVia is srvConnect with the client's end of the transport
// wrapped by wrap, when set.
func srvConnectVia(t testing.TB, s *mcpbridge.Server, copts *mcp.ClientOptions, version string, wrap func(mcp.Transport) mcp.Transport) *mcp.ClientSession {
	t.Helper()
	var ct mcp.Transport
	ct, st := mcp.NewInMemoryTransports()
	if wrap != nil {
		ct = wrap(ct)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts)
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Logf("serve: %v", err)
		}
	})
	return cs
}

func srvNew(t testing.TB, tk *toolkit.Toolkit, opts ...mcpbridge.ServerOption) *mcpbridge.Server {
	s, err := mcpbridge.NewServer(tk, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// srvVersions are the protocol revisions the in-process tests run under: the
// newest (sessionless, server/discover) and the newest with initialize.
var srvVersions = []string{"", "2025-11-25"}

func TestServerListsTools(t *testing.T) {
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			tk := srvToolkit(t)
			cs := srvConnect(t, srvNew(t, tk), nil, v)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*mcp.Tool{}
			var names []string
			for _, tool := range res.Tools {
				byName[tool.Name] = tool
				names = append(names, tool.Name)
			}
			if got := strings.Join(names, ","); got != "noop,slow,steps,weather" && len(names) != 4 {
				t.Fatalf("tools = %s", got)
			}
			w := byName["weather"]
			if w == nil || w.Description != "Current weather in a city." || w.Title != "Weather" {
				t.Fatalf("weather = %+v", w)
			}
			a := w.Annotations
			if a == nil || !a.ReadOnlyHint || a.Title != "Weather" || a.DestructiveHint == nil || *a.DestructiveHint ||
				!a.IdempotentHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Fatalf("weather annotations = %+v", a)
			}
			in, _ := json.Marshal(w.InputSchema)
			if !strings.Contains(string(in), `"city"`) || !strings.Contains(string(in), `"maximum":7`) {
				t.Fatalf("weather input schema = %s", in)
			}
			out, _ := json.Marshal(w.OutputSchema)
			if !strings.Contains(string(out), `"temp_c"`) {
				t.Fatalf("weather output schema = %s", out)
			}
			st := byName["steps"].Annotations
			if st == nil || st.ReadOnlyHint || *st.DestructiveHint || !st.IdempotentHint || *st.OpenWorldHint {
				t.Fatalf("steps annotations = %+v", st)
			}
			if n := byName["noop"]; n.Annotations != nil || n.OutputSchema != nil {
				t.Fatalf("noop has annotations %+v or an output schema %v", n.Annotations, n.OutputSchema)
			}
		})
	}
}

func TestServerStructuredContent(t *testing.T) {
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			cs := srvConnect(t, srvNew(t, srvToolkit(t)), nil, v)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 {
				t.Fatalf("result = %+v", res)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			var got srvWeatherOut
			if err := json.Unmarshal([]byte(text), &got); err != nil || got != (srvWeatherOut{"Oslo", 21.5}) {
				t.Fatalf("text content %q: %v", text, err)
			}
			sc, _ := json.Marshal(res.StructuredContent)
			if string(sc) != `{"city":"Oslo","temp_c":21.5}` {
				t.Fatalf("structuredContent = %s", sc)
			}
		})
	}
}

func TestServerInvalidArguments(t *testing.T) {
	cs := srvConnect(t, srvNew(t, srvToolkit(t)), nil, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": 3, "days": 9}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) == 0 {
		t.Fatalf("result = %+v", res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{"city: ", "days: "} {
		if !strings.Contains(text, want) {
			t.Errorf("error text %q lacks %q", text, want)
		}
	}
	if res.StructuredContent != nil {
		t.Errorf("a failed call has structured content %v", res.StructuredContent)
	}
}

func TestServerProgress(t *testing.T) {
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			cs := srvConnect(t, srvNew(t, srvToolkit(t)), &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, req.Params)
					mu.Unlock()
				},
			}, v)
			params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
			params.SetProgressToken("tok-1")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || res.Content[0].(*mcp.TextContent).Text != "done" {
				t.Fatalf("result = %+v", res)
			}
			// Notifications may arrive just after the response.
			deadline := time.Now().Add(5 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				end := n > 0 && got[n-1].Message == "all"
				mu.Unlock()
				if end {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no progress notification")
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			last := -1.0
			for _, p := range got {
				if p.ProgressToken != "tok-1" {
					t.Errorf("token = %v", p.ProgressToken)
				}
				if p.Progress <= last {
					t.Errorf("progress went from %v to %v (%q)", last, p.Progress, p.Message)
				}
				last = p.Progress
				if p.Message == "a quarter" {
					if p.Progress != 25 || p.Total != 100 {
						t.Errorf("a quarter: progress %v of %v", p.Progress, p.Total)
					}
				}
			}
			// Progress is coalesced when the client is slower than the tool,
			// so only the last one is sure to come.
			if end := got[len(got)-1]; end.Message != "all" || end.Progress != 100 {
				t.Errorf("last progress = %+v", end)
			}
			if len(got) < 3 {
				t.Errorf("only %d progress notifications for 6 progress events 2ms apart", len(got))
			}
		})
	}
}

func TestServerProgressNeedsToken(t *testing.T) {
	var mu sync.Mutex
	n := 0
	cs := srvConnect(t, srvNew(t, srvToolkit(t)), &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			n++
			mu.Unlock()
		},
	}, "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	// A ping is answered after any notification sent before the response.
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 0 {
		t.Fatalf("%d progress notifications without a progress token", n)
	}
}

func TestServerCancel(t *testing.T) {
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			rs := &srvResults{ch: make(chan *events.Event, 16)}
			tk := srvToolkit(t, toolkit.WithInlineObserver(rs))
			progressed := make(chan struct{}, 1)
			cs := srvConnect(t, srvNew(t, tk), &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
					select {
					case progressed <- struct{}{}:
					default:
					}
				},
			}, v)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
			params.SetProgressToken(7)
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, params)
				errc <- err
			}()
			select {
			case <-progressed:
			case <-time.After(10 * time.Second):
				t.Fatal("the slow call never reported progress")
			}
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("a cancelled call returned no error")
			}
			select {
			case ev := <-rs.ch:
				if ev.Tool != "slow" || ev.Result.State != events.StateInterrupted || !strings.HasPrefix(ev.Session, mcpbridge.DefaultSessionPrefix) {
					t.Fatalf("result event = %+v %+v", ev, ev.Result)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the toolkit call did not end after notifications/cancelled")
			}
		})
	}
}

func TestServerEventsReachNATS(t *testing.T) {
	bus := natstest.Bus(t)
	tk := srvToolkit(t, toolkit.WithInlineObserver(bus.Publisher()))
	got := make(chan *events.Event, 64)
	sub, err := bus.Subscribe(bus.Subjects().All(), func(ev *events.Event) { got <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := bus.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	cs := srvConnect(t, srvNew(t, tk), nil, "")
	params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	params.SetProgressToken("p")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	seen := map[events.Type]int{}
	timeout := time.After(10 * time.Second)
	for seen[events.TypeResult] == 0 {
		select {
		case ev := <-got:
			if ev.Tool != "steps" || !strings.HasPrefix(ev.Session, mcpbridge.DefaultSessionPrefix) || !strings.HasPrefix(ev.Call, "mcp-") {
				t.Fatalf("event %s of session %q call %q tool %q", ev.Type, ev.Session, ev.Call, ev.Tool)
			}
			seen[ev.Type]++
			if ev.Type == events.TypeResult && (ev.Result.State != events.StateSuccess || events.ContentText(ev.Result.Content) != "done") {
				t.Fatalf("result on NATS = %+v", ev.Result)
			}
		case <-timeout:
			t.Fatalf("events on NATS so far: %v", seen)
		}
	}
	if seen[events.TypeStart] != 1 || seen[events.TypeProgress] != 6 {
		t.Fatalf("events on NATS: %v", seen)
	}
}

// TestServerHTTP: the stateful handler (the default) keeps an MCP session per
// client (Mcp-Session-Id), on which the go-sdk client negotiates 2025-11-25;
// the stateless one serves the newest revision, each request a session.
func TestServerHTTP(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        *mcp.StreamableHTTPOptions
		version     string
		wantVersion string
	}{
		{"stateful", nil, "", "2025-11-25"},
		{"stateful-2025-06-18", nil, "2025-06-18", "2025-06-18"},
		{"stateless", &mcp.StreamableHTTPOptions{Stateless: true}, "", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.version
			tk := srvToolkit(t)
			s := srvNew(t, tk)
			hs := httptest.NewServer(s.Handler(tc.opts))
			defer hs.Close()
			var mu sync.Mutex
			var progress []float64
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					progress = append(progress, req.Params.Progress)
					mu.Unlock()
				},
			})
			ctx := context.Background()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != tc.wantVersion {
				t.Fatalf("negotiated %s, want %s", got, tc.wantVersion)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 4 {
				t.Fatalf("tools: %v %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Rome"}})
			if err != nil || res.IsError {
				t.Fatalf("weather: %+v %v", res, err)
			}
			if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"city":"Rome","temp_c":21.5}` {
				t.Fatalf("structuredContent = %s", sc)
			}
			params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
			params.SetProgressToken("h")
			if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
				t.Fatalf("steps: %+v %v", res, err)
			}
			mu.Lock()
			n := len(progress)
			mu.Unlock()
			if n == 0 {
				t.Error("no progress over HTTP")
			}
			if tc.opts == nil {
				if open := tk.Sessions(); len(open) != 1 || open[0] != mcpbridge.DefaultSessionPrefix+cs.ID() {
					t.Errorf("toolstream sessions %v for MCP session %q", open, cs.ID())
				}
			} else {
				// Each stateless request's session closes as the request ends.
				deadline := time.Now().Add(5 * time.Second)
				for len(tk.Sessions()) > 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if open := tk.Sessions(); len(open) != 0 {
					t.Errorf("toolstream sessions open between stateless requests: %v", open)
				}
			}
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
			// Closing the MCP session (DELETE, or the end of each request
			// under the sessionless revision) closes the toolstream session.
			deadline := time.Now().Add(5 * time.Second)
			for len(tk.Sessions()) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("toolstream sessions still open: %v", tk.Sessions())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
