package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolstream/toolstream/mcpbridge"
	"github.com/toolstream/toolstream/toolkit"
)

// initializeBody is an MCP initialize request, as a client's first POST.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// postMCP sends initializeBody to url with the headers h and returns the
// status, the response's headers and the start of its body.
func postMCP(t *testing.T, method, url string, h map[string]string) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(initializeBody)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return resp.StatusCode, resp.Header, string(b)
}

// TestServerOriginCheck: the HTTP handler refuses (403) a browser page on
// another origin, and takes requests without Origin (desktop clients), from
// its own origin and from WithAllowedOrigins, whose preflights it answers.
// Before the check, a page anywhere could call the tools through the
// user's browser: every request below was served.
func TestServerOriginCheck(t *testing.T) {
	s := srvNew(t, srvToolkit(t), mcpbridge.WithAllowedOrigins("http://App.example:8080"))
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(nil))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	url := hs.URL + "/mcp"
	host := strings.TrimPrefix(hs.URL, "http://")

	for _, c := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{"http://" + host, http.StatusOK},
		{"https://" + host, http.StatusOK},
		{"http://app.example:8080", http.StatusOK},
		{"http://evil.example", http.StatusForbidden},
		{"http://app.example", http.StatusForbidden}, // another port
		{"https://app.example:8080", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://" + host + ".evil.example", http.StatusForbidden},
	} {
		h := map[string]string{}
		if c.origin != "" {
			h["Origin"] = c.origin
		}
		status, hdr, body := postMCP(t, http.MethodPost, url, h)
		if status != c.want {
			t.Errorf("Origin %q: status %d, want %d (%s)", c.origin, status, c.want, body)
		}
		if status == http.StatusForbidden && !strings.Contains(body, "WithAllowedOrigins") {
			t.Errorf("Origin %q: the 403 does not say what to do: %s", c.origin, body)
		}
		if c.origin == "http://app.example:8080" && hdr.Get("Access-Control-Allow-Origin") != c.origin {
			t.Errorf("allowed origin: Access-Control-Allow-Origin %q", hdr.Get("Access-Control-Allow-Origin"))
		}
	}
	// A preflight from an allowed origin is answered; from another, refused.
	pre := map[string]string{"Origin": "http://app.example:8080", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, mcp-session-id"}
	status, hdr, _ := postMCP(t, http.MethodOptions, url, pre)
	if status != http.StatusNoContent || !strings.Contains(hdr.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "authorization") || !strings.Contains(hdr.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("preflight: %d %v", status, hdr)
	}
	pre["Origin"] = "http://evil.example"
	if status, _, _ := postMCP(t, http.MethodOptions, url, pre); status != http.StatusForbidden {
		t.Errorf("preflight from another origin: %d", status)
	}
}

// TestServerHTTPOptionsRefused: origins and authorization settings that
// cannot work fail NewServer with an error that says what to give.
func TestServerHTTPOptionsRefused(t *testing.T) {
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return nil, auth.ErrInvalidToken
	}
	for _, c := range []struct {
		opt  mcpbridge.ServerOption
		want string
	}{
		{mcpbridge.WithAllowedOrigins("app.example"), "scheme://host"},
		{mcpbridge.WithAllowedOrigins("https://app.example/path"), "scheme://host"},
		{mcpbridge.WithAuthorization(mcpbridge.Authorization{Resource: "/mcp", AuthorizationServers: []string{"https://as.example"}, Verify: verify}), "absolute http(s) URL"},
		{mcpbridge.WithAuthorization(mcpbridge.Authorization{Resource: "https://mcp.example/mcp", Verify: verify}), "AuthorizationServers"},
		{mcpbridge.WithAuthorization(mcpbridge.Authorization{Resource: "https://mcp.example/mcp", AuthorizationServers: []string{"as.example"}, Verify: verify}), "not an absolute"},
		{mcpbridge.WithAuthorization(mcpbridge.Authorization{Resource: "https://mcp.example/mcp", AuthorizationServers: []string{"https://as.example"}}), "needs Verify"},
	} {
		_, err := mcpbridge.NewServer(toolkit.New(), c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one that says %q", err, c.want)
		}
	}
}

// authServer is an MCP server that wants bearer tokens: "good" is alice's,
// with the scope "tools"; "narrow" is bob's without it; others are refused.
type authServer struct {
	url, metaURL string
	hs           *httptest.Server
}

func newAuthServer(t *testing.T, issuer string, opts ...mcpbridge.ServerOption) *authServer {
	t.Helper()
	tk := srvToolkit(t)
	srvSizeTools(t, tk)
	whoami := toolkit.MustTool(toolkit.Spec{Name: "whoami", Description: "Says on whose behalf it runs."},
		func(ctx context.Context, _ struct{}) (string, error) { return "user=" + toolkit.User(ctx), nil })
	if err := tk.Add(whoami); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	hs := httptest.NewUnstartedServer(mux)
	base := "http://" + hs.Listener.Addr().String()
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		exp := time.Now().Add(time.Hour)
		switch token {
		case "good":
			return &auth.TokenInfo{UserID: "alice", Scopes: []string{"tools"}, Expiration: exp}, nil
		case "narrow":
			return &auth.TokenInfo{UserID: "bob", Expiration: exp}, nil
		}
		return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
	}
	opts = append(opts,
		mcpbridge.WithAuthorization(mcpbridge.Authorization{
			Resource:             base + "/mcp",
			AuthorizationServers: []string{issuer},
			Scopes:               []string{"tools"},
			Verify:               verify,
			ResourceName:         "toolstream test",
		}),
		mcpbridge.WithCallContext(func(ctx context.Context, req *mcp.CallToolRequest) context.Context {
			if ti := req.Extra.TokenInfo; ti != nil {
				ctx = toolkit.WithUser(ctx, ti.UserID)
			}
			return ctx
		}))
	s := srvNew(t, tk, opts...)
	mux.Handle("/mcp", s.Handler(nil))
	mux.Handle(s.ProtectedResourceMetadata())
	hs.Start()
	t.Cleanup(hs.Close)
	return &authServer{url: base + "/mcp", metaURL: base + "/.well-known/oauth-protected-resource/mcp", hs: hs}
}

// TestServerBearerAuthorization: with WithAuthorization, a request without a
// token, or with one Verify refuses, gets 401 and a challenge naming the
// protected-resource metadata, which is served where it says (RFC 9728);
// a token without the required scope gets 403; a valid token's user
// reaches the tool.
func TestServerBearerAuthorization(t *testing.T) {
	as := newAuthServer(t, "https://as.example")
	for _, token := range []string{"", "wrong"} {
		h := map[string]string{}
		if token != "" {
			h["Authorization"] = "Bearer " + token
		}
		status, hdr, body := postMCP(t, http.MethodPost, as.url, h)
		if status != http.StatusUnauthorized {
			t.Fatalf("token %q: status %d (%s)", token, status, body)
		}
		chs, err := oauthex.ParseWWWAuthenticate(hdr.Values("WWW-Authenticate"))
		if err != nil || len(chs) != 1 || chs[0].Scheme != "bearer" || chs[0].Params["resource_metadata"] != as.metaURL || chs[0].Params["scope"] != "tools" {
			t.Fatalf("token %q: WWW-Authenticate %q (%v)", token, hdr.Values("WWW-Authenticate"), err)
		}
	}
	if status, _, body := postMCP(t, http.MethodPost, as.url, map[string]string{"Authorization": "Bearer narrow"}); status != http.StatusForbidden {
		t.Fatalf("token without the scope: status %d (%s)", status, body)
	}
	// The metadata, as the Go SDK's client reads it (it checks the resource).
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), as.metaURL, as.url, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if prm.Resource != as.url || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != "https://as.example" || prm.ResourceName != "toolstream test" {
		t.Fatalf("metadata = %+v", prm)
	}
	// A valid token: the client connects and the tool runs as alice.
	tk := srvToolkit(t)
	c := connect(t, tk, "authed", mcpbridge.HTTP{URL: as.url, Headers: http.Header{"Authorization": {"Bearer good"}}})
	defer c.Close()
	res := runOne(t, tk, "mcp__authed__whoami", `{}`)
	if res.IsError() || res.Text() != "user=alice" {
		t.Fatalf("whoami: %v %q", res.State, res.Text())
	}
}

// TestClientUnauthorizedSaysWhy: a server that answers 401 fails Connect
// with an error that says so and what to set (HTTP.OAuth or a header), or
// that the header's token was refused. Before, the error ended with the
// SDK's "Unauthorized" and did not say what to do.
func TestClientUnauthorizedSaysWhy(t *testing.T) {
	as := newAuthServer(t, "https://as.example")
	for _, c := range []struct {
		h    http.Header
		want string
	}{
		{nil, "it wants authorization, so set HTTP.OAuth"},
		{http.Header{"Authorization": {"Bearer wrong"}}, "to the Authorization header of HTTP.Headers: the token is wrong or expired"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := mcpbridge.Connect(ctx, srvToolkit(t), "authed", mcpbridge.HTTP{URL: as.url, Headers: c.h})
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `resource_metadata="`+as.metaURL+`"`) {
			t.Errorf("headers %v: err = %v, want it to say %q and quote the challenge", c.h, err, c.want)
		}
	}
}

// TestClientOAuthWithAuthorizationHeader: OAuth and a fixed Authorization
// header cannot both set the header; Connect says so rather than letting
// the header silently replace the tokens.
func TestClientOAuthWithAuthorizationHeader(t *testing.T) {
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         "http://127.0.0.1:3000/callback",
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: "id"},
		AuthorizationCodeFetcher: func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return nil, errors.New("not reached")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ep := mcpbridge.HTTP{URL: "http://127.0.0.1:1/mcp", OAuth: h, Headers: http.Header{"Authorization": {"Bearer x"}}}
	_, err = mcpbridge.Connect(context.Background(), srvToolkit(t), "both", ep)
	if err == nil || !strings.Contains(err.Error(), "both OAuth and an Authorization header") {
		t.Fatalf("err = %v", err)
	}
}

// runOne runs one call in a fresh session of tk.
func runOne(t *testing.T, tk *toolkit.Toolkit, name, args string) toolkit.Result {
	t.Helper()
	sess, err := tk.Session(fmt.Sprintf("s%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sess.Run(ctx, []toolkit.Call{{ID: "1", Name: name, Args: json.RawMessage(args)}})[0]
}

// TestServerAuthorizationTypeScriptPeer runs the official TypeScript SDK's
// client (clients/mcp/auth-peer.mjs) against a server with
// WithAuthorization: no token and a wrong one get 401 (the SDK's client
// does not connect), the SDK finds the protected-resource metadata from the
// server URL alone and accepts its resource, the valid token connects and
// the tool runs as its user, and another Origin gets 403.
func TestServerAuthorizationTypeScriptPeer(t *testing.T) {
	node, dir := serverPeerNode(t)
	as := newAuthServer(t, "https://as.example")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdout := runPeer(ctx, t, node, dir, "auth-peer.mjs", as.url)
	type attempt struct {
		Status           int
		ResourceMetadata string
		Scope            string
		ClientError      *struct {
			Message string
			Code    int
		}
	}
	var report struct {
		OK          bool
		None, Wrong attempt
		Resource    string
		Metadata    struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		Tools       int
		Whoami      string
		OtherOrigin int
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &report); err != nil || !report.OK {
		t.Fatalf("report %s: %v", stdout, err)
	}
	for name, a := range map[string]attempt{"none": report.None, "wrong": report.Wrong} {
		if a.Status != http.StatusUnauthorized || a.ResourceMetadata != as.metaURL || a.Scope != "tools" || a.ClientError == nil || a.ClientError.Code != http.StatusUnauthorized {
			t.Errorf("%s: %+v", name, a)
		}
	}
	if report.Resource != as.url || report.Metadata.Resource != as.url || len(report.Metadata.AuthorizationServers) != 1 {
		t.Errorf("metadata: %+v, resource %q", report.Metadata, report.Resource)
	}
	if report.Whoami != "user=alice" || report.Tools < 2 || report.OtherOrigin != http.StatusForbidden {
		t.Errorf("report = %+v", report)
	}
}

// tokenServer is an OAuth authorization server for the client-credentials
// grant: it publishes its metadata (RFC 8414) and issues the token "good"
// to the client "svc" with the secret "s3cret", counting the tokens issued.
func tokenServer(t *testing.T) (issuer string, issued *atomic.Int32) {
	t.Helper()
	issued = new(atomic.Int32)
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":%q,"authorization_endpoint":%q,"grant_types_supported":["client_credentials"],"token_endpoint_auth_methods_supported":["client_secret_basic"],"code_challenge_methods_supported":["S256"],"response_types_supported":["code"]}`,
			hs.URL, hs.URL+"/token", hs.URL+"/authorize")
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "svc" || secret != "s3cret" || r.FormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"good","token_type":"Bearer","expires_in":3600,"scope":"tools"}`)
	})
	return hs.URL, issued
}

// TestClientOAuthKeepsItsBounds: HTTP.OAuth gets a token the way MCP says
// (the 401's challenge, the protected-resource metadata, the authorization
// server's metadata, the client-credentials grant of the SDK's handler),
// the call runs as the token's user, and HTTP's own settings stay: a
// streamed message over MaxEventSize fails its call naming the bound, and
// the reconnection that follows reuses the token (one token issued).
// Passing the handler through TransportFunc, the only way before, lost the
// bound (the SDK's streamable client takes 0 as none).
func TestClientOAuthKeepsItsBounds(t *testing.T) {
	issuer, issued := tokenServer(t)
	as := newAuthServer(t, issuer)
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: "svc", ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: "s3cret"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tk := srvToolkit(t)
	connect(t, tk, "authed", mcpbridge.HTTP{URL: as.url, OAuth: h, MaxEventSize: 4096})
	if res := runOne(t, tk, "mcp__authed__whoami", `{}`); res.IsError() || res.Text() != "user=alice" {
		t.Fatalf("whoami: %v %q", res.State, res.Text())
	}
	if res := runOne(t, tk, "mcp__authed__blob", `{"n":8192}`); !res.IsError() || !strings.Contains(res.Text(), "exceeded 4096 bytes") {
		t.Fatalf("a message over MaxEventSize: %v %.300s", res.State, res.Text())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := runOne(t, tk, "mcp__authed__blob", `{"n":5}`)
		if res.Text() == "bbbbb" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call served after the failure: %v %.300s", res.State, res.Text())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := issued.Load(); n != 1 {
		t.Fatalf("%d tokens issued, want 1: the reconnection asked again", n)
	}
}
