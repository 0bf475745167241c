package mcpbridge_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// srvNilOutputTools are typed tools with an output schema that return
// nothing: a nil pointer (no part at all) and a nil map (the JSON null).
func srvNilOutputTools(t testing.TB, tk *toolkit.Toolkit) {
	t.Helper()
	if err := tk.Add(
		toolkit.MustTool(toolkit.Spec{Name: "nilptr", Description: "Returns a nil pointer."},
			func(ctx context.Context, _ struct{}) (*srvWeatherOut, error) { return nil, nil }),
		toolkit.MustTool(toolkit.Spec{Name: "nilmap", Description: "Returns a nil map."},
			func(ctx context.Context, _ struct{}) (map[string]int, error) { return nil, nil }),
	); err != nil {
		t.Fatal(err)
	}
}

// TestServerNoStructuredResult: a tool with an output schema whose
// successful result has no structured value (a typed tool's nil pointer or
// nil map, which the engine lets through as "no structured result") is an
// isError result that says so, not a success without structuredContent,
// which MCP forbids for a tool with an output schema and the TypeScript
// SDK's client throws on ("has an output schema but did not return
// structured content"). Before, the client got content [] (nil pointer) or
// the text "null" (nil map) and no structuredContent. So is a result Evict
// replaced by its reference, which follows the explanation.
func TestServerNoStructuredResult(t *testing.T) {
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			tk := srvToolkit(t)
			srvNilOutputTools(t, tk)
			tk.Use(interceptors.Evict(interceptors.EvictLimit(1000), interceptors.EvictBackend(interceptors.DirBackend(filepath.Join(t.TempDir(), "toolstream-evict-test"), 0, 0))))
			if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "bigout", Description: "A large structured result."},
				func(ctx context.Context, _ struct{}) (srvWeatherOut, error) {
					return srvWeatherOut{City: strings.Repeat("x", 5000)}, nil
				})); err != nil {
				t.Fatal(err)
			}
			cs := srvConnect(t, srvNew(t, tk), nil, v)
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range list.Tools {
				if (tool.Name == "nilptr" || tool.Name == "nilmap") && tool.OutputSchema == nil {
					t.Fatalf("%s has no output schema", tool.Name)
				}
			}
			for _, name := range []string{"nilptr", "nilmap"} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
				if err != nil {
					t.Fatal(err)
				}
				text := srvText(res)
				if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, `tool "`+name+`"`) ||
					!strings.Contains(text, "no structured value") || !strings.Contains(text, "output schema") {
					t.Errorf("%s: isError %v, structuredContent %v, %d blocks, text %q", name, res.IsError, res.StructuredContent, len(res.Content), text)
				}
			}
			// A result Evict replaced by a reference (text): the reference
			// follows the explanation.
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bigout"})
			if err != nil {
				t.Fatal(err)
			}
			if text := srvText(res); !res.IsError || res.StructuredContent != nil || len(res.Content) != 2 ||
				!strings.Contains(text, "no structured value (it has no JSON value)") || !strings.Contains(text, "Its content follows.") ||
				!strings.Contains(text, "toolstream-evict-test") {
				t.Errorf("bigout: isError %v, structuredContent %v, %d blocks, text %q", res.IsError, res.StructuredContent, len(res.Content), text)
			}
			// A tool that returns its value is unchanged.
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Lima"}})
			if err != nil || res.IsError || res.StructuredContent == nil {
				t.Fatalf("weather: %+v %v", res, err)
			}
		})
	}
}
