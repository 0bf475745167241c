// Package weborigin reads web origins (scheme://host[:port]) as browsers
// send them in the Origin header, for the HTTP handlers that check them
// (ui, mcpbridge).
package weborigin

import (
	"fmt"
	"net/url"
	"strings"
)

// Parse returns s as a browser writes an origin: scheme and host in lower
// case, no default port (443 for https, 80 for http), no trailing slash.
// Anything else than scheme://host[:port] is an error that says what an
// origin looks like.
func Parse(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(s), "/"))
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("not an origin: want scheme://host[:port], as in %q", "https://app.example.com")
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); (scheme == "https" && p == "443") || (scheme == "http" && p == "80") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return scheme + "://" + host, nil
}
