package durable

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

func convKey(session string) string {
	return "conv." + base64.RawURLEncoding.EncodeToString([]byte(session))
}

// SaveConversation keeps the session's conversation in the bucket (its
// JSON, which must fit one NATS message: 1 MiB by default).
func (s *Store) SaveConversation(ctx context.Context, session string, conv *agent.Conversation) error {
	data, err := json.Marshal(conv)
	if err != nil {
		return fmt.Errorf("durable: conversation of %q: %w", session, err)
	}
	if _, err := s.b.Put(ctx, convKey(session), data); err != nil {
		return fmt.Errorf("durable: saving the conversation of %q (%d bytes): %w", session, len(data), err)
	}
	return nil
}

// LoadConversation returns the session's saved conversation, or nil and no
// error when there is none.
func (s *Store) LoadConversation(ctx context.Context, session string) (*agent.Conversation, error) {
	value, _, err := s.b.Get(ctx, convKey(session))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("durable: loading the conversation of %q: %w", session, err)
	}
	conv := &agent.Conversation{}
	if err := json.Unmarshal(value, conv); err != nil {
		return nil, fmt.Errorf("durable: the conversation of %q: %w", session, err)
	}
	return conv, nil
}

// SaveEachTurn returns an option (a BatchStart hook, agent.Hooks) that saves conv
// when a turn's calls start: the snapshot a restarted process resumes
// from. A failed save is reported to onErr (if not nil); the run goes on.
func (s *Store) SaveEachTurn(session string, conv *agent.Conversation, onErr func(error)) agent.Option {
	return agent.WithHooks(agent.Hooks{BatchStart: func(ctx context.Context, _ *agent.RunInfo, _ *toolkit.Batch) {
		if err := s.SaveConversation(context.WithoutCancel(ctx), session, conv); err != nil && onErr != nil {
			onErr(err)
		}
	}})
}

// Resume makes a conversation saved in the middle of a turn valid again:
// the calls of its last assistant message that have no answer run in sess
// (through the store's interceptor, a call that finished before the restart
// returns its stored result instead of running again) and their results are
// added. Then agent.Loop.Run can go on with it. It returns how many calls
// it answered. The calls read and update the conversation's state
// (agent.State) as they would in the loop; a call that finished before the
// restart, its stored result returned, does not run again, so what it
// wrote to the state after the conversation was saved is not there.
//
// A call the loop did not run because the model's reply was cut at the
// output token limit before its arguments were written (the message's last
// call, its arguments blank) is not run here either: it gets the loop's
// refusal again (agent.ErrTruncatedCall), never a run with {}. No
// interceptor saw it, so the bucket has no result for it.
func Resume(ctx context.Context, sess *toolkit.Session, conv *agent.Conversation) (int, error) {
	last := -1
	for i := len(conv.Messages) - 1; i >= 0; i-- {
		if conv.Messages[i].Role == agent.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 || len(conv.Messages[last].Calls) == 0 {
		return 0, nil
	}
	answered := map[string]bool{}
	for _, m := range conv.Messages[last+1:] {
		if m.Role != agent.RoleTool {
			return 0, nil // the turn is over: nothing to resume
		}
		answered[m.CallID] = true
	}
	var calls []toolkit.Call
	var opts []toolkit.StartOption
	made := conv.Messages[last].Calls
	for i, c := range made {
		if answered[c.ID] {
			continue
		}
		if i == len(made)-1 && len(bytes.TrimSpace(c.Args)) == 0 {
			opts = append(opts, toolkit.WithOutcome(len(calls), toolkit.Failure(events.StateError, cutBeforeArgs(c.Name))))
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return 0, nil
	}
	stateCtx, saveState := agent.WithState(ctx, conv) // the calls see and update the run's state
	results := sess.Run(stateCtx, calls, opts...)
	saveState()
	for _, r := range results {
		conv.Add(agent.Message{Role: agent.RoleTool, CallID: r.Call.ID, Tool: r.Call.Name, Content: r.Content, IsError: r.IsError()})
	}
	if err := conv.Check(); err != nil {
		return len(calls), fmt.Errorf("durable: the resumed conversation: %w", err)
	}
	return len(calls), ctx.Err()
}

// cutBeforeArgs is the failure of a call whose reply was cut at the output
// token limit before its arguments were written, in the words of the agent
// loop's own refusal (agent/truncated.go).
func cutBeforeArgs(tool string) error {
	return fmt.Errorf("%w before its arguments were written. Call %s again, writing less before the call", agent.ErrTruncatedCall, tool)
}
