package thread

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/toolstream/toolstream/internal/weborigin"

	"github.com/toolstream/toolstream/ui/internal/frames"
)

// WithAllowedOrigins lets pages served from these origins
// ("https://app.example.com": scheme, host and port as a browser writes
// them in Origin; a trailing slash and a default port are dropped) call
// the handlers from a browser: their requests are accepted, their CORS
// preflights answered, and their responses carry
// Access-Control-Allow-Origin (with credentials). Without it the handlers
// accept browser requests from their own origin only (Host.Admit). An
// entry that is not an origin allows nothing, and every refusal names it.
// Options add up.
func WithAllowedOrigins(origins ...string) Option {
	return func(h *Host) { h.origins = append(h.origins, origins...) }
}

// originPolicy is the host's cross-origin policy: net/http's
// CrossOriginProtection, with the allowed origins as its trusted ones.
type originPolicy struct {
	cop     *http.CrossOriginProtection
	allowed map[string]bool
	bad     []string // entries of WithAllowedOrigins that are not origins, and why
}

func newOrigins(list []string) *originPolicy {
	o := &originPolicy{cop: http.NewCrossOriginProtection(), allowed: map[string]bool{}}
	for _, s := range list {
		n, err := weborigin.Parse(s)
		if err == nil {
			err = o.cop.AddTrustedOrigin(n)
		}
		if err != nil {
			o.bad = append(o.bad, fmt.Sprintf("%q: %v", s, err))
			continue
		}
		o.allowed[n] = true
	}
	return o
}

// Admit makes the checks the handlers make before they read a request,
// against what a page on another origin can make a browser send, and
// answers the request itself when it fails one, or is a CORS preflight;
// it reports whether the handler goes on. Call it first in routes of your
// own that act on threads.
//
//   - A browser request from another origin is refused (403, naming the
//     origin and WithAllowedOrigins), unless the origin is allowed
//     (WithAllowedOrigins). What counts is net/http's
//     CrossOriginProtection: Sec-Fetch-Site (same-origin, or none: the
//     user's own navigation), else the Origin header's host against the
//     request's Host; a request with neither (curl, a server) is not a
//     browser's and goes on. Unlike CrossOriginProtection, GET is checked
//     too: the AI SDK's resume route reads a thread and marks its
//     response delivered.
//   - A request with a body must be declared as JSON (Content-Type
//     application/json, parameters allowed), else 415: a page on any site
//     can make a browser post text/plain or a form without asking the
//     server first, but not JSON.
//   - A preflight (OPTIONS with Access-Control-Request-Method) from an
//     allowed origin gets 204 with the CORS headers; from another, 403.
func (h *Host) Admit(w http.ResponseWriter, r *http.Request) bool {
	o := h.cross
	origin := r.Header.Get("Origin")
	if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		if !o.allowed[origin] {
			frames.HTTPError(w, http.StatusForbidden, o.refusal(r))
			return false
		}
		hd := w.Header()
		o.allow(hd, origin)
		hd.Set("Access-Control-Allow-Methods", "GET, POST")
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			hd.Set("Access-Control-Allow-Headers", req) // the origin is trusted with any
		}
		hd.Set("Access-Control-Max-Age", "600")
		hd.Add("Vary", "Access-Control-Request-Method")
		hd.Add("Vary", "Access-Control-Request-Headers")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	check := r
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		// CrossOriginProtection lets "safe" methods through; here a GET
		// reads a thread (and a resume marks its response delivered).
		check = r.WithContext(r.Context())
		check.Method = http.MethodPost
	}
	if err := o.cop.Check(check); err != nil {
		frames.HTTPError(w, http.StatusForbidden, o.refusal(r))
		return false
	}
	if o.allowed[origin] {
		o.allow(w.Header(), origin)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
		if msg := notJSON(r.Header.Get("Content-Type")); msg != "" {
			frames.HTTPError(w, http.StatusUnsupportedMediaType, msg)
			return false
		}
	}
	return true
}

// allow sets the CORS headers of a response to an allowed origin.
func (o *originPolicy) allow(hd http.Header, origin string) {
	hd.Set("Access-Control-Allow-Origin", origin)
	hd.Set("Access-Control-Allow-Credentials", "true")
	hd.Set("Access-Control-Expose-Headers", "X-Vercel-AI-UI-Message-Stream")
	hd.Add("Vary", "Origin")
}

// refusal says why a cross-origin request is refused and what allows it.
func (o *originPolicy) refusal(r *http.Request) string {
	var b strings.Builder
	origin, site := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
	switch {
	case origin == "":
		fmt.Fprintf(&b, "ui: a %s request (Sec-Fetch-Site: %s) without an Origin header is refused: a page on another origin may not run, read or answer this server's threads", site, site)
	default:
		fmt.Fprintf(&b, "ui: a request from origin %q is refused: it is not this server's origin (Host %q)", origin, r.Host)
		if site != "" {
			fmt.Fprintf(&b, ", the browser says %s", site)
		}
		fmt.Fprintf(&b, ", and a page there may not run, read or answer this server's threads; if a front end of yours is served from there, allow it with ui.WithAllowedOrigins(%q)", origin)
	}
	if len(o.bad) > 0 {
		fmt.Fprintf(&b, " (note: ui.WithAllowedOrigins was given what is not an origin, which allows nothing: %s)", strings.Join(o.bad, "; "))
	}
	return b.String()
}

// notJSON says why a request body's Content-Type is refused, or "".
func notJSON(ct string) string {
	const why = ": a page on any site can make a browser send text/plain or a form to this server without asking it first, and JSON it cannot"
	if ct == "" {
		return "ui: the request has no Content-Type: send its body as JSON with Content-Type: application/json" + why
	}
	mt, _, err := mime.ParseMediaType(ct)
	if mt == "application/json" { // parameters allowed, even malformed ones
		return ""
	}
	if err != nil && mt == "" {
		mt = ct
	}
	return fmt.Sprintf("ui: Content-Type %q is refused: send the body as JSON with Content-Type: application/json%s", mt, why)
}
