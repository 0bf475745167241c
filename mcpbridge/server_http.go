package mcpbridge

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolstream/toolstream/internal/weborigin"
)

// WithAllowedOrigins lets browser pages on these origins (for example
// "http://localhost:6274", scheme://host[:port] each) use the HTTP
// handler, and answers their CORS preflights. Handler always refuses, with
// 403, a request whose Origin header names another origin than the
// server's own host and these: MCP asks servers to check Origin, so that a
// page in the user's browser cannot drive the tools. Requests without an
// Origin header (desktop apps, command-line clients) are not affected.
func WithAllowedOrigins(origins ...string) ServerOption {
	return func(o *serverOptions) { o.origins = append(o.origins, origins...) }
}

// Authorization protects the HTTP handler with OAuth 2 bearer tokens, as
// MCP's authorization for HTTP says: a request without a token the Verify
// function accepts gets 401 with a WWW-Authenticate challenge that names
// the protected-resource metadata (RFC 9728), which the
// ProtectedResourceMetadata handler serves and clients read to find the
// authorization server.
type Authorization struct {
	// Resource is the MCP endpoint's URL as clients reach it, for example
	// "https://mcp.example.com/mcp": the metadata's resource, and the
	// audience Verify must check tokens were issued for.
	Resource string
	// AuthorizationServers are the issuer URLs of the authorization
	// servers whose tokens Verify accepts (at least one).
	AuthorizationServers []string
	// Scopes are required of every token (403 insufficient scope
	// otherwise), and listed as the metadata's scopes_supported.
	Scopes []string
	// Verify checks a bearer token (its signature or introspection, its
	// expiry, its audience) and returns what it grants: an error wrapping
	// auth.ErrInvalidToken refuses it with 401; a TokenInfo must have an
	// Expiration. The TokenInfo reaches tools/call as req.Extra.TokenInfo
	// (WithCallContext), and its UserID binds an MCP session to its user.
	Verify auth.TokenVerifier
	// ResourceName is shown to users by clients (optional).
	ResourceName string
}

// WithAuthorization makes Handler require bearer tokens (see
// Authorization); mount ProtectedResourceMetadata beside it.
func WithAuthorization(a Authorization) ServerOption {
	return func(o *serverOptions) { o.authz = &a }
}

// wellKnownResource is where RFC 9728 puts protected-resource metadata:
// inserted between the host and the resource's path.
const wellKnownResource = "/.well-known/oauth-protected-resource"

// httpAuth is the checked form of the HTTP options.
type httpAuth struct {
	origins  map[string]bool // "scheme://host[:port]", lower case
	authz    *Authorization
	metaPath string // the metadata's path on the server
	metaURL  string // its URL, for WWW-Authenticate
	meta     *oauthex.ProtectedResourceMetadata
}

// checkHTTPOptions validates WithAllowedOrigins and WithAuthorization.
func checkHTTPOptions(o *serverOptions) (*httpAuth, error) {
	h := &httpAuth{origins: map[string]bool{}}
	for _, s := range o.origins {
		origin, err := weborigin.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("mcpbridge: allowed origin %q: %v", s, err)
		}
		h.origins[origin] = true
	}
	a := o.authz
	if a == nil {
		return h, nil
	}
	u, err := url.Parse(a.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("mcpbridge: Authorization.Resource %q: give the MCP endpoint's absolute http(s) URL, without query or fragment (https://mcp.example.com/mcp)", a.Resource)
	}
	if len(a.AuthorizationServers) == 0 {
		return nil, errors.New("mcpbridge: Authorization needs AuthorizationServers: the issuer URL of at least one authorization server")
	}
	for _, as := range a.AuthorizationServers {
		if au, err := url.Parse(as); err != nil || (au.Scheme != "https" && au.Scheme != "http") || au.Host == "" {
			return nil, fmt.Errorf("mcpbridge: Authorization.AuthorizationServers: %q is not an absolute http(s) URL", as)
		}
	}
	if a.Verify == nil {
		return nil, errors.New("mcpbridge: Authorization needs Verify, the function that checks a bearer token")
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	h.authz = a
	h.metaPath = wellKnownResource + path
	h.metaURL = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + h.metaPath
	h.meta = &oauthex.ProtectedResourceMetadata{
		Resource:               a.Resource,
		AuthorizationServers:   slices.Clone(a.AuthorizationServers),
		ScopesSupported:        slices.Clone(a.Scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           a.ResourceName,
	}
	return h, nil
}

// Handler returns an http.Handler that serves MCP's streamable HTTP
// transport, to mount where the user wants (for example at /mcp). opts may be
// nil: stateful sessions (Mcp-Session-Id, protocol revisions up to
// 2025-11-25), each with its own toolstream session, closed with it. With
// opts.Stateless the handler serves the sessionless newest revision, and each
// request is a toolstream session of its own.
//
// Before the SDK's handler (which refuses, on a loopback listener, a Host
// that is not loopback), it refuses with 403 a request from a browser page
// on another origin (WithAllowedOrigins), then, with WithAuthorization, a
// request without a valid bearer token (401).
func (s *Server) Handler(opts *mcp.StreamableHTTPOptions) http.Handler {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, opts)
	if a := s.http.authz; a != nil {
		h = auth.RequireBearerToken(a.Verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: s.http.metaURL,
			Scopes:              a.Scopes,
		})(h)
	}
	return s.checkOrigin(h)
}

// ProtectedResourceMetadata returns the path of the protected-resource
// metadata (RFC 9728: /.well-known/oauth-protected-resource followed by the
// path of Authorization.Resource) and its handler, to mount at the root of
// the server's host: mux.Handle(srv.ProtectedResourceMetadata()). Without
// WithAuthorization the handler answers 404.
func (s *Server) ProtectedResourceMetadata() (path string, h http.Handler) {
	if s.http.authz == nil {
		return wellKnownResource, http.NotFoundHandler()
	}
	return s.http.metaPath, auth.ProtectedResourceMetadataHandler(s.http.meta)
}

// corsExposedHeaders are the response headers MCP clients read.
const corsExposedHeaders = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"

// checkOrigin refuses requests whose Origin is neither the server's host
// nor allowed, and answers the CORS preflights of allowed origins.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r) // not a browser's request
			return
		}
		o, err := weborigin.Parse(origin)
		same := err == nil && strings.EqualFold(o[strings.Index(o, "://")+3:], r.Host)
		allowed := err == nil && s.http.origins[o]
		if !same && !allowed {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is neither this server's (%s) nor an allowed origin (mcpbridge.WithAllowedOrigins)", cutAt(origin, 200), r.Host), http.StatusForbidden)
			return
		}
		if allowed {
			w.Header().Add("Vary", "Origin")
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", corsExposedHeaders)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				// An allowed origin may send what MCP needs (Authorization,
				// Mcp-Session-Id, Mcp-Param-* headers...): echo its list.
				w.Header().Set("Access-Control-Allow-Headers", r.Header.Get("Access-Control-Request-Headers"))
				w.Header().Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
