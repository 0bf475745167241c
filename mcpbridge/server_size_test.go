package mcpbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// srvSizeTools adds "blob", which answers {"n": bytes} with that many bytes
// of text (or, with "fail", fails after streaming them), and "rows", a typed
// tool whose output (with an output schema) holds that many bytes.
func srvSizeTools(t testing.TB, tk *toolkit.Toolkit) {
	type blobIn struct {
		N    int  `json:"n"`
		Fail bool `json:"fail,omitempty"`
	}
	blob := toolkit.MustTool(toolkit.Spec{Name: "blob", Description: "n bytes of text."},
		func(ctx context.Context, in blobIn) (string, error) {
			if in.Fail {
				return "", fmt.Errorf("failed after %s", strings.Repeat("e", in.N))
			}
			return strings.Repeat("b", in.N), nil
		})
	type rowsOut struct {
		Data string `json:"data"`
	}
	rows := toolkit.MustTool(toolkit.Spec{Name: "rows", Description: "n bytes in a JSON object."},
		func(ctx context.Context, in blobIn) (rowsOut, error) {
			return rowsOut{Data: strings.Repeat("r", in.N)}, nil
		})
	if err := tk.Add(blob, rows); err != nil {
		t.Fatal(err)
	}
}

// srvText joins a result's text content.
func srvText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// srvStillServes checks that a session whose previous call was large still
// serves an ordinary call.
func srvStillServes(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil || res.IsError || srvText(res) != `{"city":"Oslo","temp_c":21.5}` {
		t.Fatalf("the next call on the same connection: %v %+v", err, res)
	}
}

// TestServerEchoOfEightMiB: a typed tool that echoes 8 MiB of arguments
// (an output schema, so the JSON goes as structuredContent and, for older
// clients, as text) used to send both copies, over 16 MiB: the go-sdk
// client refused the frame and closed the connection, failing every call
// on it. With the default limit the JSON goes once, as structuredContent
// (which an output schema makes a MUST; the text copy is a SHOULD), with a
// text block that says so; the connection serves the next call. (One
// protocol revision: the frame limit is the transport's;
// TestServerMaxResultSize runs the same cases small.)
func TestServerEchoOfEightMiB(t *testing.T) {
	tk := srvToolkit(t)
	cs := srvConnect(t, srvNew(t, tk), nil, "2025-11-25")
	// The bound only turns a hang into a failure: under -race on a loaded
	// machine the call takes about 25 s (the SDK encodes and decodes the
	// 8 MiB each way).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	city := strings.Repeat("x", 8<<20)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": city}})
	if err != nil {
		t.Fatalf("8 MiB echoed: %v", err)
	}
	if res.IsError {
		t.Fatalf("8 MiB echoed: an error: %.300s", srvText(res))
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["city"] != city {
		t.Fatalf("structuredContent does not hold the 8 MiB city (%d keys)", len(sc))
	}
	text := srvText(res)
	if len(text) > 1000 || !strings.Contains(text, "structuredContent") || !strings.Contains(text, "limit") {
		t.Fatalf("the text content should say the JSON is in structuredContent only, and why: %.300s", text)
	}
	t.Logf("the text content: %s", text)
	srvStillServes(t, cs)
}

// TestServerResultOverTheDefaultLimit: a result larger than the default
// limit (a 20 MiB text, which the go-sdk client could not read either) is
// an isError result that gives its size and the limit and says the call
// ran; the connection serves the next call. The toolkit's own result (its
// events, what observers and NATS see) is the tool's, unchanged.
func TestServerResultOverTheDefaultLimit(t *testing.T) {
	rec := &srvResults{ch: make(chan *events.Event, 4)}
	tk := srvToolkit(t, toolkit.WithInlineObserver(rec))
	srvSizeTools(t, tk)
	cs := srvConnect(t, srvNew(t, tk), nil, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 20 << 20
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: map[string]any{"n": n}})
	if err != nil {
		t.Fatalf("a 20 MiB result: %v", err)
	}
	text := srvText(res)
	if !res.IsError || len(text) > 1000 {
		t.Fatalf("a 20 MiB result: isError %v, %.300s", res.IsError, text)
	}
	for _, want := range []string{`"blob"`, strconv.Itoa(mcpbridge.DefaultMaxResultSize), "15 MiB", "ran"} {
		if !strings.Contains(text, want) {
			t.Errorf("the error does not say %q: %s", want, text)
		}
	}
	if !strings.Contains(text, strconv.Itoa(n+srvEncoded(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{}}}))) {
		t.Errorf("the error does not give the result's size: %s", text)
	}
	t.Logf("the model reads: %s", text)
	ev := <-rec.ch
	if ev.Result.State != events.StateSuccess || len(events.ContentText(ev.Result.Content)) != n {
		t.Fatalf("the toolkit's result: %s, %d bytes; want the tool's success", ev.Result.State, len(events.ContentText(ev.Result.Content)))
	}
	srvStillServes(t, cs)
}

// TestServerMaxResultSize: WithMaxResultSize bounds the encoded result
// exactly: a text result of the limit passes, one byte more is refused; a
// failed call's long error output is refused the same way (and said to
// have failed, with the start of its error); a JSON result whose two
// copies exceed the limit goes once when one fits, and is refused when even
// one does not; each change is logged (WithLogger); a negative limit sends
// everything.
func TestServerMaxResultSize(t *testing.T) {
	const limit = 64 << 10
	tk := srvToolkit(t)
	srvSizeTools(t, tk)
	var log testutil.SyncBuffer
	cs := srvConnect(t, srvNew(t, tk, mcpbridge.WithMaxResultSize(limit),
		mcpbridge.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))), nil, "")
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return res
	}
	overhead := srvEncoded(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{}}})
	if res := call("blob", map[string]any{"n": limit - overhead}); res.IsError || len(srvText(res)) != limit-overhead {
		t.Fatalf("a result of exactly the limit: isError %v, %d bytes", res.IsError, len(srvText(res)))
	}
	res := call("blob", map[string]any{"n": limit - overhead + 1})
	if text := srvText(res); !res.IsError || !strings.Contains(text, strconv.Itoa(limit+1)) || !strings.Contains(text, strconv.Itoa(limit)) {
		t.Fatalf("a result one byte over the limit: isError %v, %.300s", res.IsError, text)
	}
	res = call("blob", map[string]any{"n": limit, "fail": true})
	if text := srvText(res); !res.IsError || !strings.Contains(text, "The call failed (failed after eee") || !strings.Contains(text, strconv.Itoa(limit)) || len(text) > 1000 {
		t.Fatalf("a failure over the limit: isError %v, %.1000s", res.IsError, text)
	} else {
		t.Logf("a failure over the limit: %s", text)
	}
	// Two copies of 40 KB are over 64 KiB; one fits.
	res = call("rows", map[string]any{"n": 40_000})
	if sc, _ := res.StructuredContent.(map[string]any); res.IsError || sc["data"] != strings.Repeat("r", 40_000) || strings.Contains(srvText(res), "rrrr") {
		t.Fatalf("a JSON result with room for one copy: isError %v, text %.300s", res.IsError, srvText(res))
	}
	// Small enough for both: both, as ever.
	res = call("rows", map[string]any{"n": 100})
	if want := `{"data":"` + strings.Repeat("r", 100) + `"}`; res.IsError || srvText(res) != want || res.StructuredContent == nil {
		t.Fatalf("a small JSON result: %+v", res)
	}
	res = call("rows", map[string]any{"n": 70_000})
	if text := srvText(res); !res.IsError || res.StructuredContent != nil || !strings.Contains(text, strconv.Itoa(limit)) {
		t.Fatalf("a JSON result too large even once: isError %v, %.300s", res.IsError, text)
	}
	srvStillServes(t, cs)
	logged := log.String()
	if strings.Count(logged, "a result over the limit replaced by an error") != 3 ||
		strings.Count(logged, "a JSON result sent without its text copy") != 1 || !strings.Contains(logged, "tool=rows") {
		t.Fatalf("the logger was not told of each result changed for its size:\n%s", logged)
	}

	unlimited := srvConnect(t, srvNew(t, tk, mcpbridge.WithMaxResultSize(-1)), nil, "")
	res, err := unlimited.CallTool(context.Background(), &mcp.CallToolParams{Name: "rows", Arguments: map[string]any{"n": 100_000}})
	if err != nil || res.IsError || len(srvText(res)) != 100_000+len(`{"data":""}`) || res.StructuredContent == nil {
		t.Fatalf("no limit: %v %v", err, res != nil && res.IsError)
	}
}

// srvEncoded is the size of a result as the SDK encodes it.
func srvEncoded(t *testing.T, res *mcp.CallToolResult) int {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}
