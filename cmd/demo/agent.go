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
Tool groups start switched off: reset_tools switches them on.`

func (a *agent) run(ctx context.Context, task string) (runSummary, error) {
	var sum runSummary
	start := time.Now()
	system := systemPrompt
	if frag := strings.TrimSpace(a.loader.Prompt(a.sess.ID())); frag != "" {
		system += "\n\n" + frag
	}
	conv := []Message{{Role: RoleSystem, Text: system}, {Role: RoleUser, Text: task}}
	a.view.printf("\nuser: %s\n", task)
	for n := 1; ; n++ {
		if n > a.maxTurns {
			sum.Answer = fmt.Sprintf("(stopped after %d turns)", a.maxTurns)
			break
		}
		defs, err := a.sess.Definitions(ctx)
		if err != nil {
			return sum, err
		}
		turn, err := a.model.Next(ctx, conv, defs)
		if err != nil {
			return sum, fmt.Errorf("turn %d: %s: %w", n, a.model.Name(), err)
		}
		sum.Turns = n
		conv = append(conv, Message{Role: RoleAssistant, Text: turn.Text, Calls: turn.Calls})
		a.emitTurn(n, turn)
		if len(turn.Calls) == 0 {
			sum.Answer = turn.Text
			break
		}
		results, err := a.runTurn(ctx, n, defs, turn)
		if err != nil {
			return sum, err
		}
		sum.Results = append(sum.Results, results...)
		for _, r := range results {
			conv = append(conv, Message{Role: RoleTool, CallID: r.Call.ID, Text: r.Text()})
		}
	}
	sum.Took = time.Since(start)
	calls := len(sum.Results)
	_ = a.sess.Emit(doneEvent, doneInfo{Text: sum.Answer, Calls: calls, Turns: sum.Turns})
	a.view.printf("\nmodel: %s\n", sum.Answer)
	return sum, nil
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
func (a *agent) runTurn(ctx context.Context, n int, defs []toolkit.Definition, t Turn) ([]toolkit.Result, error) {
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
				return nil, err
			}
		}
	}
	results := run.Wait() // all of them, in call order
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	a.view.results(results, time.Since(start))
	return results, nil
}
