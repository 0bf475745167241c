// Command conformanceclient is the client under test for the MCP conformance
// suite's client scenarios (npm @modelcontextprotocol/conformance): the suite
// starts it with the scenario's server URL as its argument, the scenario's
// name in MCP_CONFORMANCE_SCENARIO and its settings (JSON) in
// MCP_CONFORMANCE_CONTEXT. It registers the server's tools in a toolkit with
// mcpbridge.Connect over mcpbridge.HTTP, as an application would, and calls
// the tool the scenario expects through the toolkit.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformanceclient <server-url> (MCP_CONFORMANCE_SCENARIO names the scenario)")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

// scenarioCall is the tool a scenario expects to be called, with its
// arguments.
var scenarioCall = map[string]struct {
	tool string
	args string
}{
	"tools_call":                          {"add_numbers", `{"a":5,"b":3}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
	"sse-retry":                           {"test_reconnection", `{}`},
}

func run(url, scenario, rawContext string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var sc map[string]any
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	tk := toolkit.New()
	defer tk.Close(context.Background())
	opts := []mcpbridge.ClientOption{mcpbridge.WithPrefix(""), mcpbridge.WithDialTimeout(20 * time.Second),
		// Accept every elicitation with no content: the client fills in
		// the schema's defaults (SEP-1034).
		mcpbridge.WithElicitation(func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		})}
	ep := mcpbridge.HTTP{URL: url}
	if strings.HasPrefix(scenario, "auth/") {
		h, err := oauthHandler(scenario, sc)
		if err != nil {
			return err
		}
		ep.OAuth = h
	}
	c, err := mcpbridge.Connect(ctx, tk, "server", ep, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	call, ok := scenarioCall[scenario]
	if !ok && strings.HasPrefix(scenario, "auth/") {
		call.tool, call.args, ok = "test-tool", `{}`, true
	}
	if !ok {
		return nil // connecting and listing the tools is the scenario
	}
	sess, err := tk.Session("conformance")
	if err != nil {
		return err
	}
	res := sess.Run(ctx, []toolkit.Call{{ID: "1", Name: call.tool, Args: json.RawMessage(call.args)}})[0]
	if res.IsError() {
		return fmt.Errorf("calling %s: %s", call.tool, res.Text())
	}
	return nil
}

// redirectURL is where the authorization server sends the browser back.
const redirectURL = "http://127.0.0.1:3000/callback"

// oauthHandler is the grant a host would configure: client credentials
// for the scenarios of that extension (a service, no user), else the
// authorization code with PKCE, the client identified by a metadata
// document URL, pre-registered credentials (when the scenario gives them)
// or dynamic registration, whichever the authorization server supports.
func oauthHandler(scenario string, sc map[string]any) (auth.OAuthHandler, error) {
	id, _ := sc["client_id"].(string)
	secret, _ := sc["client_secret"].(string)
	if strings.HasPrefix(scenario, "auth/client-credentials-") {
		if secret == "" {
			return nil, errors.New("client credentials: the scenario gives no client_secret (private_key_jwt is not supported)")
		}
		return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
		})
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:                    redirectURL,
		AuthorizationCodeFetcher:       browser,
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://conformance-test.local/client-metadata.json"},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirectURL}, ClientName: "toolstream conformance client"},
		},
		RequestRefreshToken: true,
	}
	if id != "" && secret != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// browser is the host's browser step: a person would open args.URL, sign
// in, and the authorization server would redirect to redirectURL with the
// code. The suite's authorization server redirects at once, so the step is
// one request whose redirect is read instead of followed.
func browser(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := neturl.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirectURL) {
		return nil, fmt.Errorf("the authorization server answered %s without a redirect to %s (Location %q)", resp.Status, redirectURL, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s %s", e, q.Get("error_description"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
