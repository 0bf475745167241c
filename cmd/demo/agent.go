package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// The demo's own session-level events, beside the library's: a model turn
// and the end of the loop. The web page draws its timeline from them.
const (
	turnEvent = "turn"
	doneEvent = "done"
)

// turnInfo is the body of a turn event.
type turnInfo struct {
	N     int        `json:"n"`
	Model string     `json:"model"`
	Note  string     `json:"note,omitempty"`
	Text  string     `json:"text,omitempty"`
	Calls []callInfo `json:"calls,omitempty"`
}

type callInfo struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// doneInfo is the body of a done event.
type doneInfo struct {
	Text  string `json:"text"`
	Calls int    `json:"calls"`
	Turns int    `json:"turns"`
}

// runSummary is what the loop did, for the summary table.
type runSummary struct {
	Turns   int
	Results []toolkit.Result
	Answer  string
	Took    time.Duration
}

// agent is the loop: ask the model, run the calls it asks for, give it the
// results, repeat until it answers without calls.
type agent struct {
	sess     *toolkit.Session
	model    Model
	view     *termView
	desk     *approvalDesk
	loader   *skills.Loader
	maxTurns int
}

const systemPrompt = `You are a careful assistant with tools that work on a local folder.
Use the tools to answer; prefer parallel calls for independent reads.
Tool groups start switched off: tool_search finds the group you need, reset_tools switches it on.`

func (a *agent) run(ctx context.Context, task string) (runSummary, error) {
	var sum runSummary
	start := time.Now()
	system := systemPrompt
	if a.loader != nil {
		if frag := strings.TrimSpace(a.loader.Prompt(a.sess.ID())); frag != "" {
			system += "\n\n" + frag
		}
	}
	conv := []Message{{Role: RoleSystem, Text: system}, {Role: RoleUser, Text: task}}
	a.view.user(task)
	for n := 1; ; n++ {
		if n > a.maxTurns {
			sum.Answer = fmt.Sprintf("(stopped after %d turns: -max-turns)", a.maxTurns)
			a.view.printf("\n=== Stopped after %d turns (-max-turns %d): the model has not answered ===\n", a.maxTurns, a.maxTurns)
			break
		}
		defs, err := a.sess.Definitions(ctx)
		if err != nil {
			return sum, a.interrupted(ctx, n, "before asking the model", err)
		}
		turn, err := a.model.Next(ctx, conv, defs)
		if err != nil {
			if ctx.Err() != nil {
				return sum, &stopError{turn: n, where: "while waiting for the model", err: err}
			}
			return sum, fmt.Errorf("turn %d: %s: %w", n, a.model.Name(), err)
		}
		sum.Turns = n
		conv = append(conv, Message{Role: RoleAssistant, Text: turn.Text, Calls: turn.Calls})
		a.emitTurn(n, turn)
		if len(turn.Calls) == 0 {
			sum.Answer = turn.Text
			a.view.answer(n, turn)
			break
		}
		results, stop, err := a.runTurn(ctx, n, defs, turn)
		if err != nil {
			return sum, err
		}
		sum.Results = append(sum.Results, results...)
		for _, r := range results {
			conv = append(conv, Message{Role: RoleTool, CallID: r.Call.ID, Text: r.Text()})
		}
		if stop.Reason != "" { // the batch ends the loop (loopstop.go)
			sum.Answer = loopAnswer(stop, results)
			a.view.printf("\n=== The loop stops after turn %d (%s): %s ===\n", n, stop.Reason, safeText(sum.Answer))
			break
		}
	}
	sum.Took = time.Since(start)
	calls := len(sum.Results)
	_ = a.sess.Emit(doneEvent, doneInfo{Text: sum.Answer, Calls: calls, Turns: sum.Turns})
	return sum, nil
}

// stopError says where the loop was when its context ended (Ctrl-C).
type stopError struct {
	turn  int
	where string // "while waiting for the model", "while 6 calls ran: ..."
	err   error
}

func (e *stopError) Error() string { return fmt.Sprintf("turn %d: %s: %v", e.turn, e.where, e.err) }
func (e *stopError) Unwrap() error { return e.err }

// interrupted returns err, as a stopError when the run's context ended.
func (a *agent) interrupted(ctx context.Context, turn int, where string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return &stopError{turn: turn, where: where, err: err}
}

func (a *agent) emitTurn(n int, t Turn) {
	info := turnInfo{N: n, Model: a.model.Name(), Note: t.Note, Text: t.Text}
	for _, c := range t.Calls {
		info.Calls = append(info.Calls, callInfo{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	_ = a.sess.Emit(turnEvent, info)
}

// runTurn runs one turn's calls: approvals and external answers are
// handled as the calls suspend, and a turn the watching person stops is
// cancelled after its StopAfter.
func (a *agent) runTurn(ctx context.Context, n int, defs []toolkit.Definition, t Turn) ([]toolkit.Result, toolkit.Stop, error) {
	a.view.turn(n, t, defs)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.StopAfter > 0 {
		stop := time.AfterFunc(t.StopAfter, func() {
			a.view.printf("  (the user presses stop after %v)\n", t.StopAfter.Round(time.Millisecond))
			cancel()
		})
		defer stop.Stop()
	}
	start := time.Now()
	run := a.sess.Start(tctx, t.Calls)
	for res := range run.Results() { // as each call finishes or suspends
		if !res.Final() {
			if err := a.desk.suspended(ctx, a.sess.ID(), res.Call); err != nil {
				cancel()
				run.Wait()
				return nil, toolkit.Stop{}, a.interrupted(ctx, n, "while waiting for an approval", err)
			}
		}
	}
	results := run.Wait() // all of them, in call order
	if ctx.Err() != nil {
		stopped := 0
		for _, r := range results {
			if r.State == toolkit.StateInterrupted {
				stopped++
			}
		}
		return nil, toolkit.Stop{}, &stopError{turn: n, where: fmt.Sprintf("%d of its %d calls interrupted", stopped, len(results)), err: ctx.Err()}
	}
	a.view.results(results, time.Since(start))
	stop, _ := run.Stop() // a return-direct batch, a call limit that ends the run
	return results, stop, nil
}
