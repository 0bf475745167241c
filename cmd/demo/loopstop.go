package main

import (
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/toolkit"
)

// loopAnswer is the final answer of a loop that a batch stopped
// (toolkit.Batch.Stop): for a return-direct batch, the tools' results
// themselves, in call order (every one of them, not only the first); for a
// run ended by a limit, what ended it.
func loopAnswer(s toolkit.Stop, results []toolkit.Result) string {
	if s.Reason == toolkit.StopReturnDirect {
		texts := make([]string, 0, len(results))
		for _, r := range results {
			if t := strings.TrimSpace(r.Text()); t != "" {
				texts = append(texts, t)
			}
		}
		return strings.Join(texts, "\n\n")
	}
	if s.Detail != "" {
		return s.Detail
	}
	return fmt.Sprintf("(the run was stopped: %s)", s.Reason)
}
