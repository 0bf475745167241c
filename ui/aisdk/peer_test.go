package aisdk_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/toolstream/toolstream/ui/aisdk"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// TestAISDKPeer runs the `ai` package's own chat transport and UI message
// stream reader (clients/ui, aisdk-peer.mjs) against the handler: tool
// parts must end in the right states with the right outputs (a
// preliminary output, an error, a reset, a denial, an approval round
// trip) and a resume from the durable stream must rebuild the live
// message.
func TestAISDKPeer(t *testing.T) {
	uitest.Node(t)
	a := uitest.New(t)
	h := aisdk.NewHandler(a.Host, aisdk.WithReplay(a.Bus))
	mux := http.NewServeMux()
	mux.Handle("POST /api/chat", h)
	mux.Handle("GET /api/chat/{id}/stream", h)
	var once sync.Once
	mux.HandleFunc("POST /open-gate", func(w http.ResponseWriter, _ *http.Request) { once.Do(func() { close(a.Gate) }) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	uitest.RunNode(t, "aisdk-peer.mjs", srv.URL)
}
