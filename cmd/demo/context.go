package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
)

// The demo agent's context policy (agent.ContextPolicy): what each request
// leaves out of the conversation, which itself stays whole (the page, the
// store and the summary table have every turn).
const (
	// scriptedKeepTurns: the scripted tour sends the task and its last
	// four turns, so that its answer's request leaves turn 1 out, a cut
	// the page and the terminal show. Its answer reads turns 3 to 5.
	scriptedKeepTurns = 4
	// modelMaxTokens bounds what a real model is sent (estimated as
	// bytes/4), well inside today's context windows: old tool results are
	// cleared first, then the oldest turns go.
	modelMaxTokens = 60_000
	// summaryCalls is how many dropped calls the summary names, the latest.
	summaryCalls = 20
)

// contextPolicy is the demo agent's context policy for model m.
func contextPolicy(m agent.Model) agent.ContextPolicy {
	p := agent.ContextPolicy{MaxTokens: modelMaxTokens, Summarize: summarizeCut}
	if _, ok := m.(*scriptedModel); ok {
		p = agent.ContextPolicy{KeepTurns: scriptedKeepTurns, Summarize: summarizeCut}
	}
	return p
}

// summarizeCut writes what the policy dropped as a note to the model,
// without a model call: each dropped call, its tool and the first line of
// its result. (An application with a budget for it asks a model.)
func summarizeCut(ctx context.Context, cut []agent.Message) (string, error) {
	results := map[string]string{}
	for _, m := range cut {
		if m.Role == agent.RoleTool {
			first, _, _ := strings.Cut(strings.TrimSpace(m.Text()), "\n")
			results[m.CallID] = clipRunes(first, 80)
		}
	}
	var lines []string
	for _, m := range cut {
		for _, c := range m.Calls {
			lines = append(lines, fmt.Sprintf("- %s %s: %s", c.ID, c.Name, results[c.ID]))
		}
	}
	if len(lines) == 0 {
		return fmt.Sprintf("(%d earlier messages were left out to keep the context small.)", len(cut)), nil
	}
	var b strings.Builder
	b.WriteString("Earlier turns, left out to keep the context small. Their calls:\n")
	if len(lines) > summaryCalls {
		fmt.Fprintf(&b, "- (%d earlier calls)\n", len(lines)-summaryCalls)
		lines = lines[len(lines)-summaryCalls:]
	}
	b.WriteString(strings.Join(lines, "\n"))
	return b.String(), nil
}

// contextCutLine is the terminal's line for a context_cut event.
func contextCutLine(ev *events.Event) string {
	var c agent.ContextCut
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return ""
	}
	var parts []string
	if c.Dropped > 0 {
		s := fmt.Sprintf("%d of %d messages left out", c.Dropped, c.Messages)
		if len(c.DroppedCalls) > 0 {
			s += " (" + strings.Join(c.DroppedCalls, ", ") + ")"
		}
		switch {
		case c.Summarized > 0:
			s += ", summarized"
		case c.SummaryError != "":
			s += ", no summary: " + c.SummaryError
		}
		parts = append(parts, s)
	}
	if c.Cleared > 0 {
		s := fmt.Sprintf("%d old results cleared", c.Cleared)
		if len(c.ClearedCalls) > 0 {
			s += " (" + strings.Join(c.ClearedCalls, ", ") + " newly)"
		}
		parts = append(parts, s)
	}
	return safeLine(fmt.Sprintf("turn %d: %s; the model is sent %s of %s", c.Turn, strings.Join(parts, "; "), kB(c.BytesAfter), kB(c.BytesBefore)))
}

func kB(n int) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f kB", float64(n)/1000)
}
