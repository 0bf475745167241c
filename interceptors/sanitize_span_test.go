package interceptors_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// The model never sees a secret that the stream let through in pieces: a
// large result whose pieces were redacted one at a time is redacted again
// as a whole when a match could span the cut between two pieces. Before,
// the pass over the whole result skipped it (its fingerprint matched what
// the filter let through) and the model read the secret.
func TestSanitizeSecretAcrossPiecesNeverReachesTheModel(t *testing.T) {
	key := "sk-" + strings.Repeat("Kp7", 30)
	pad := strings.Repeat("lorem-ipsum-dolor,", 4000) // 72 KB without a space or a newline
	lines := strings.Repeat("lorem ipsum\n", 3000)    // 36 KB of lines
	cases := []struct {
		name   string
		opt    interceptors.SanitizeOption
		deltas []string
		leak   string
		stream bool // no delta shows the secret either
	}{
		// A line over 64 KiB without a space is cut 512 bytes before its
		// end: here 8 bytes into the key.
		{"long line", interceptors.RedactAPIKeys(), []string{pad + key + strings.Repeat(",", 512-len(key)+8)}, "Kp7Kp7Kp7", false},
		// The built-in bearer pattern (\s+) spans a newline between two
		// deltas.
		{"bearer over a newline", interceptors.RedactAPIKeys(),
			[]string{lines + "Authorization: Bearer\n", strings.Repeat("T0k", 10) + " end\n" + lines}, "T0kT0kT0k", true},
		// A pattern of one's own that spans lines, across two deltas.
		{"custom across lines", interceptors.Redact("pem", regexp.MustCompile(`(?s)-----BEGIN SECRET-----.*?-----END SECRET-----`), "[pem]"),
			[]string{lines + "-----BEGIN SECRET-----\n", "S3cr3tS3cr3t\n-----END SECRET-----\n" + lines}, "S3cr3t", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var parts []events.Part
			for _, d := range c.deltas {
				parts = append(parts, events.Text(d))
			}
			tk, rec := sanPartsKit(t, parts, c.opt, interceptors.SanitizeMaxBytes(0))
			res := evRun(t, tk, "s", toolkit.Call{ID: "c", Name: "parts", Args: []byte(`{}`)})[0]
			evCheckDeltas(t, rec, res)
			if i := strings.Index(res.Text(), c.leak); i >= 0 {
				t.Fatalf("the model reads the secret: %q", res.Text()[max(i-40, 0):min(i+40, len(res.Text()))])
			}
			if c.stream {
				sanNoKey(t, rec, res, c.leak)
			}
		})
	}
}
