package agent

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// The session-level events the loop sends (toolkit.Session.Emit), beside
// the tool calls' own events. docs/events.md describes their bodies.
const (
	// EventTurnStart: a turn begins; the model is asked. Body TurnStart.
	EventTurnStart events.Type = "turn_start"
	// EventText: a piece of the model's words, as it streams. Body TextDelta.
	EventText events.Type = "text_delta"
	// EventArgs: a piece of a tool call's arguments, as the model writes
	// them, before the call starts. Body ArgsDelta.
	EventArgs events.Type = "args_delta"
	// EventRetry: the model failed and is asked again after a wait; what
	// the turn streamed so far is void. Body Retry.
	EventRetry events.Type = "model_retry"
	// EventTurnEnd: the model's whole reply. Its calls run next. Body TurnEnd.
	EventTurnEnd events.Type = "turn_end"
	// EventAnswer: the run is over with an answer. Body Answer.
	EventAnswer events.Type = "answer"
	// EventError: the run ended with an error. Body RunError.
	EventError events.Type = "run_error"
)

// TurnStart is the body of a turn_start event.
type TurnStart struct {
	Turn  int    `json:"turn"`
	Model string `json:"model,omitempty"`
}

// TextDelta is the body of a text_delta event.
type TextDelta struct {
	Turn  int    `json:"turn"`
	Delta string `json:"delta"`
}

// ArgsDelta is the body of an args_delta event. The first one of a call
// has an empty Delta when the model names the call before its arguments.
// Call is the id the call runs with: when the loop replaces the model's id
// (missing, repeated, used earlier in the conversation), the events name
// the loop's from the first piece on.
type ArgsDelta struct {
	Turn  int    `json:"turn"`
	Index int    `json:"index"`
	Call  string `json:"call"`
	Tool  string `json:"tool"`
	Delta string `json:"delta"`
}

// Retry is the body of a model_retry event.
type Retry struct {
	Turn    int     `json:"turn"`
	Attempt int     `json:"attempt"` // the attempt that failed, from 1
	WaitMS  float64 `json:"wait_ms"`
	Error   string  `json:"error"`
}

// TurnEnd is the body of a turn_end event.
type TurnEnd struct {
	Turn       int            `json:"turn"`
	Model      string         `json:"model,omitempty"`
	Text       string         `json:"text,omitempty"`
	Calls      []toolkit.Call `json:"calls,omitempty"`
	Finish     Finish         `json:"finish,omitempty"`
	Usage      Usage          `json:"usage"`
	DurationMS float64        `json:"duration_ms"`
}

// MarshalJSON writes the body as its fields say, except that a call's
// arguments that are not JSON (a model's mistake, a call cut at the token
// limit) go as a JSON string holding them, as a call's start event has
// them: json.RawMessage cannot write them, and the event would be lost.
func (t TurnEnd) MarshalJSON() ([]byte, error) {
	type plain TurnEnd
	p := plain(t)
	cloned := false
	for i, c := range t.Calls {
		if argsJSON(c.Args) {
			continue
		}
		if !cloned {
			p.Calls, cloned = slices.Clone(t.Calls), true // the reply's calls stay as they are
		}
		p.Calls[i].Args, _ = json.Marshal(string(c.Args))
	}
	return json.Marshal(p)
}

// Answer is the body of an answer event.
type Answer struct {
	Text string `json:"text"`
	End  End    `json:"end"`
	// Truncated: the text is cut short at the output token limit
	// (Outcome.Truncated); omitted when false.
	Truncated bool          `json:"truncated,omitempty"`
	Stop      *toolkit.Stop `json:"stop,omitempty"`
	Turns     int           `json:"turns"`
	Calls     int           `json:"calls"`
	Usage     Usage         `json:"usage"`
}

// RunError is the body of a run_error event.
type RunError struct {
	Turn     int    `json:"turn"`
	Error    string `json:"error"`
	Canceled bool   `json:"canceled,omitempty"`
}

// emit sends a session-level event with the trace context of the run's
// ctx (toolkit.Session.Emit); a body that cannot be sent is the
// observers' loss only (the run goes on), as for the toolkit's own events.
func emit(ctx context.Context, s *toolkit.Session, typ events.Type, body any) {
	_ = s.Emit(ctx, typ, body)
}
