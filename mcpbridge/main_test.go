package mcpbridge_test

import (
	"os"
	"testing"

	"github.com/toolstream/toolstream/internal/leak"
)

func TestMain(m *testing.M) {
	// The stdio tests run this test binary again as an MCP server.
	if os.Getenv(envStdioServer) != "" {
		os.Exit(serveStdio())
	}
	leak.VerifyTestMain(m)
}
