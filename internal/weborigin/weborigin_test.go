package weborigin_test

import (
	"testing"

	"github.com/toolstream/toolstream/internal/weborigin"
)

// TestParse: origins come out as browsers send them; what is not one is
// an error.
func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"https://App.Example.com":     "https://app.example.com",
		" https://app.example.com/ ":  "https://app.example.com",
		"https://app.example.com:443": "https://app.example.com",
		"http://localhost:80":         "http://localhost",
		"http://127.0.0.1:5173":       "http://127.0.0.1:5173",
		"chrome-extension://abcdef":   "chrome-extension://abcdef",
	} {
		if got, err := weborigin.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "app.example.com", "https://app.example.com/path", "https://u@app.example.com", "https://a.com?q=1", "https://a.com#f", "://x"} {
		if got, err := weborigin.Parse(in); err == nil {
			t.Errorf("Parse(%q) = %q, want an error", in, got)
		}
	}
}
