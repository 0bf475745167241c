package agui_test

import (
	"net/http/httptest"
	"testing"

	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// TestHttpAgentPeer runs @ag-ui/client 1.0's HttpAgent (clients/ui,
// agui-peer.mjs) against the handler: its verifier must accept every run
// (approvals, a cancelled and a rejected one, an interrupted call) and the
// agent's messages must end as the calls did.
func TestHttpAgentPeer(t *testing.T) {
	uitest.Node(t)
	a := uitest.New(t)
	srv := httptest.NewServer(agui.NewHandler(a.Host))
	defer srv.Close()
	uitest.RunNode(t, "agui-peer.mjs", srv.URL)
}
