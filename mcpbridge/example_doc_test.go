package mcpbridge_test

import (
	"context"
	"errors"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// An MCP server started by npx over stdio, its tools in a group the model
// switches on with reset_tools. Compiled, not run: it needs npx and the
// network (docs/mcp.md shows it).
func ExampleConnect() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	groupsManager, err := groups.Install(tk)
	if err != nil {
		log.Fatal(err)
	}
	c, err := mcpbridge.Connect(ctx, tk, "files",
		mcpbridge.Stdio{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/data"}},
		mcpbridge.Exclude("write_*"), mcpbridge.WithGroup(groupsManager, false))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // disconnects, unregisters the tools and the group
	for _, p := range c.Problems() {
		log.Print(p) // a tool that could not be registered, and why
	}
}

// verifyJWT stands for the application's token check: signature, expiry,
// and an audience that is this server's Resource.
func verifyJWT(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	return nil, errors.Join(auth.ErrInvalidToken, errors.New("no token is valid here"))
}

// A server that wants a bearer token from an authorization server, and
// publishes the metadata that tells clients where to get one. Compiled,
// not run (docs/mcp.md shows it).
func ExampleWithAuthorization() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	srv, err := mcpbridge.NewServer(tk, mcpbridge.WithAuthorization(mcpbridge.Authorization{
		Resource:             "https://mcp.example.com/mcp",        // as clients reach it
		AuthorizationServers: []string{"https://auth.example.com"}, // the issuers
		Scopes:               []string{"tools"},                    // required, and listed
		Verify:               verifyJWT,                            // yours: signature, expiry, audience
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler(nil))
	mux.Handle(srv.ProtectedResourceMetadata())  // /.well-known/oauth-protected-resource/mcp
	log.Fatal(http.ListenAndServe(":8443", mux)) // behind your TLS
}
