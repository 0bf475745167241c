package interceptors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/toolkit"
)

// Evict keeps a result's binary parts (images) in the result, whether it
// stored the text or, the store failing, truncated it: a screenshot beside
// a long log must not vanish because a bucket was unavailable.
func TestEvictKeepsBinaryPartsWhenTheStoreFails(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake image")
	for name, opt := range map[string]interceptors.EvictOption{
		"stored":       evictDir(t.TempDir()),
		"store failed": interceptors.EvictBackend(evFailing{}),
	} {
		tk, rec := evKit(t, interceptors.Evict(opt, interceptors.EvictLimit(1000)))
		tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "shot"}, json.RawMessage(`{"type":"object"}`),
			func(ctx context.Context, _ json.RawMessage) ([]events.Part, error) {
				return []events.Part{events.Text(strings.Repeat("log line\n", 500)), events.Binary("image/png", png), events.Text("end\n")}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Add(t, tk, tool)
		res := evRun(t, tk, "s", testutil.Call("c1", "shot", `{}`))[0]
		evCheckDeltas(t, rec, res)
		var images int
		for _, p := range res.Content {
			if p.Type == events.PartBinary && string(p.Data) == string(png) {
				images++
			}
		}
		if images != 1 || len(res.Text()) > 1400 {
			t.Errorf("%s: %d images in a %d-byte result, want the image and a short text: %q", name, images, len(res.Text()), evHead(res.Text()))
		}
	}
}
