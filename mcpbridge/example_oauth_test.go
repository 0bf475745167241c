package mcpbridge_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// A desktop host connects to an MCP server that wants OAuth: the
// authorization code grant with PKCE, the client registered dynamically,
// and the browser step done by the host: it shows the authorization URL
// and waits for the redirect on a loopback listener.
func ExampleHTTP_oauth() {
	ln, err := net.Listen("tcp", "127.0.0.1:8765")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	results := make(chan *auth.AuthorizationResult, 1)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
		fmt.Fprintln(w, "Signed in: you may close this window.")
	}))
	browserStep := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		fmt.Println("Open this address to sign in:", args.URL) // or open the browser
		select {
		case r := <-results:
			if r.Code == "" {
				return nil, errors.New("the sign-in was refused or cancelled")
			}
			return r, nil // the handler checks state and issuer
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "my-agent", RedirectURIs: []string{redirect}},
		},
		AuthorizationCodeFetcher: browserStep,
	})
	if err != nil {
		log.Fatal(err)
	}
	tk := toolkit.New()
	c, err := mcpbridge.Connect(context.Background(), tk, "docs",
		mcpbridge.HTTP{URL: "https://mcp.example.com/mcp", OAuth: h},
		mcpbridge.WithDialTimeout(5*time.Minute)) // a person signs in during Connect
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}
