package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// largeToolName is the tool -large-result adds: its result is larger than
// one NATS message, so its events travel in pieces (docs/events.md, "Large
// content"). The eviction interceptor leaves it alone so that the result
// reaches the model, the page and outside clients whole.
const largeToolName = "export_table"

// largeTool returns export_table: mib MiB of text rows, then the same kind
// of rows as one JSON part of about a third of that.
func largeTool(mib int) *toolkit.Tool {
	return toolkit.MustTool(toolkit.Spec{
		Name:        largeToolName,
		Description: fmt.Sprintf("Export a generated table: about %d MiB of text rows and a JSON part (a result larger than one NATS message).", mib),
		ReadOnly:    true, ConcurrencySafe: true,
	}, func(ctx context.Context, _ struct{}) ([]events.Part, error) {
		em := stream.From(ctx)
		size := mib << 20
		var text strings.Builder
		text.Grow(size + 128)
		for i := 0; text.Len() < size; i++ {
			fmt.Fprintf(&text, "row %07d\tsrc/<pkg>/file_%d.go\t\"size\" & lines: %d\tnaïve 日本 ✓\n", i, i%997, i*7%1000)
			if i%20000 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				em.Step("exporting rows", text.Len(), size)
			}
		}
		type row struct {
			ID   int    `json:"id"`
			Path string `json:"path"`
			Note string `json:"note"`
		}
		var rows []row
		for i, n := 0, 0; n < size/3; i++ {
			r := row{ID: i, Path: fmt.Sprintf("src/<pkg>/file_%d.go", i%997), Note: "a \"quoted\" note & 日本"}
			rows = append(rows, r)
			n += len(r.Path) + len(r.Note) + 40
		}
		b, err := json.Marshal(map[string]any{"rows": rows, "count": len(rows)})
		if err != nil {
			return nil, err
		}
		em.Step("exported", size, size)
		return []events.Part{events.Text(text.String()), {Type: events.PartJSON, JSON: b}}, nil
	})
}

// largeTurn is the turn of the scripted model that calls export_table.
func largeTurn() scriptTurn {
	return scriptTurn{Turn: Turn{
		Note:  "export_table returns a result larger than one NATS message: its events travel in pieces and are rebuilt",
		Text:  "Exporting the whole table.",
		Calls: []toolkit.Call{call("call_big", largeToolName, map[string]any{})},
	}}
}
