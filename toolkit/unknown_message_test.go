package toolkit_test

import (
	"testing"

	"github.com/toolstream/toolstream/toolkit"
)

// TestUnknownToolMessageSentences: the unknown-tool message reads as
// sentences whether or not a close name was found; without one, the name
// and the list were run together ("unknown tool "weather" Available tools").
func TestUnknownToolMessageSentences(t *testing.T) {
	for _, tc := range []struct {
		err  toolkit.UnknownToolError
		want string
	}{
		{toolkit.UnknownToolError{Name: "weather", Available: []string{"count_lines", "hash_files"}},
			`unknown tool "weather". Available tools: count_lines, hash_files`},
		{toolkit.UnknownToolError{Name: "weather"},
			`unknown tool "weather". No tools are available.`},
		{toolkit.UnknownToolError{Name: "count_line", Suggestions: []string{"count_lines"}, Available: []string{"count_lines"}},
			`unknown tool "count_line"; did you mean "count_lines"? Available tools: count_lines`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
