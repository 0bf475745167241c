package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// noteEvent is the demo's own session-level event beside the loop's: what
// a scripted turn is meant to show. It comes just before the turn's
// turn_end; the web page puts it in the turn's heading.
const noteEvent = "note"

type noteInfo struct {
	Turn int    `json:"turn"`
	Note string `json:"note"`
}

// runSummary is what the loop did, for the summary table.
type runSummary struct {
	Turns   int
	Results []toolkit.Result
	Answer  string
	Took    time.Duration
}

const systemPrompt = `You are a careful assistant with tools that work on a local folder.
Use the tools to answer; prefer parallel calls for independent reads.
Tool groups start switched off: tool_search finds the group you need, reset_tools switches it on.`

// runner runs the demo's task with the agent loop (package agent) and
// shows each turn on the terminal: what the model asked for before the
// calls run, their results after.
type runner struct {
	sess     *toolkit.Session
	model    agent.Model
	view     *termView
	desk     *approvalDesk
	loader   *skills.Loader
	groups   *groups.Manager
	maxTurns int
	store    *durable.Store      // with -store: the conversation is saved, and resumed
	conv     *agent.Conversation // the run's, whole (the model is sent less: context.go)

	mu       sync.Mutex
	turn     int            // the turn in progress
	phase    string         // where the run is, for the Ctrl-C message
	cur      Turn           // the turn's reply, as shown
	batch    *toolkit.Batch // the turn's calls, until their results are shown
	began    time.Time      // when they started
	lastSent int            // messages the model was last sent (runhooks.go)
}

func (r *runner) run(ctx context.Context, task string) (runSummary, error) {
	start := time.Now()
	system := systemPrompt
	if r.loader != nil {
		if frag := strings.TrimSpace(r.loader.Prompt(r.sess.ID())); frag != "" {
			system += "\n\n" + frag
		}
	}
	conv := agent.NewConversation(system, task)
	opts := []agent.Option{agent.WithName(modelName(r.model)), agent.WithMaxTurns(r.maxTurns),
		agent.WithSuspended(r.suspended), agent.WithHooks(agent.Hooks{BatchStart: r.batchStarted}),
		agent.WithContextPolicy(contextPolicy(r.model)), agent.WithHooks(r.hooks())}
	if r.store != nil {
		saved, done, err := r.resume(ctx)
		if err != nil || done {
			return runSummary{Answer: saved.answer, Took: time.Since(start)}, err
		}
		if saved.conv != nil {
			conv = saved.conv
		}
		opts = append(opts, r.store.SaveEachTurn(r.sess.ID(), conv, func(err error) {
			r.view.printf("  (the conversation could not be saved: %s)\n", safeLine(err.Error()))
		}))
		// The conversation as the run left it, unless the process is being
		// stopped (Ctrl-C): then the calls it interrupted must run again
		// when the run resumes (the store forgets them), as after a crash,
		// from the conversation saved when the turn's calls started. Saved
		// with their interrupted results, the model would read that its
		// calls failed.
		defer func() {
			if ctx.Err() == nil {
				_ = r.store.SaveConversation(context.WithoutCancel(ctx), r.sess.ID(), conv)
			}
		}()
	}
	if len(conv.Messages) == 1 {
		r.view.user(task)
	}
	r.conv = conv
	loop := agent.New(shownModel{r}, opts...)
	out, err := loop.Run(ctx, r.sess, conv)
	sum := runSummary{Turns: out.Turns, Results: out.Results, Answer: out.Answer}
	if err != nil && ctx.Err() != nil {
		return sum, &stopError{turn: r.turn, where: r.where(), err: err}
	}
	r.showResults()
	sum.Took = time.Since(start)
	switch {
	case errors.Is(err, agent.ErrMaxTurns):
		sum.Answer = fmt.Sprintf("(stopped after %d turns: -max-turns)", r.maxTurns)
		r.view.printf("\n=== Stopped after %d turns (-max-turns %d): the model has not answered ===\n", r.maxTurns, r.maxTurns)
	case err != nil:
		return sum, err
	case out.End == agent.EndStopped:
		r.view.printf("\n=== The loop stops after turn %d (%s): %s ===\n", out.Turns, out.Stop.Reason, safeText(out.Answer))
	}
	return sum, nil
}

// savedRun is what the store held for the session.
type savedRun struct {
	conv   *agent.Conversation // nil: nothing saved
	answer string              // the answer of a run that is over
}

// resume loads the session's saved conversation. A run that is over is
// only reported (done); an unfinished one is made valid again first: the
// calls of its last turn that have no result run (a call that finished
// before the restart gives its stored result and does not run again).
func (r *runner) resume(ctx context.Context) (savedRun, bool, error) {
	conv, err := r.store.LoadConversation(ctx, r.sess.ID())
	if err != nil || conv == nil {
		return savedRun{}, false, err
	}
	last := conv.Messages[len(conv.Messages)-1]
	turns := 0
	for _, m := range conv.Messages {
		if m.Role == agent.RoleAssistant {
			turns++
		}
	}
	if last.Role == agent.RoleAssistant && len(last.Calls) == 0 {
		r.view.printf("\n=== Session %s: its saved run is over (%d turns); its answer: %s ===\n", safeLine(r.sess.ID()), turns, safeText(last.Text()))
		return savedRun{conv: conv, answer: last.Text()}, true, nil
	}
	r.view.printf("\n=== Session %s resumes after turn %d (%d messages saved) ===\n", safeLine(r.sess.ID()), turns, len(conv.Messages))
	if err := r.restoreSession(ctx); err != nil {
		return savedRun{}, false, err
	}
	// The person watching stops the turn's calls when its script says so,
	// as in the run that was cut short.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	if a, ok := r.model.(annotated); ok {
		if _, after := a.turnInfo(turns); after > 0 {
			t := time.AfterFunc(after, func() {
				r.view.printf("  (the user presses stop after %v)\n", after.Round(time.Millisecond))
				stop()
			})
			defer t.Stop()
		}
	}
	n, err := durable.Resume(rctx, r.sess, conv)
	if err != nil && (ctx.Err() != nil || !errors.Is(err, context.Canceled)) {
		return savedRun{}, false, err
	}
	if n > 0 {
		r.view.printf("  turn %d's %d unanswered calls answered: finished ones from the store, the others run\n", turns, n)
	}
	return savedRun{conv: conv}, false, nil
}

// modelName is the model's name for the output, or "model".
func modelName(m agent.Model) string {
	if n, ok := m.(agent.Namer); ok {
		return n.Name()
	}
	return "model"
}

// shownModel is the runner's model as the loop sees it: each reply is
// shown on the terminal (and its note sent to the page) before its calls
// run.
type shownModel struct{ r *runner }

func (m shownModel) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	r := m.r
	r.showResults() // the previous turn's, before the next turn
	n := 1
	for _, msg := range r.conv.Messages { // whole: req's may leave turns out
		if msg.Role == agent.RoleAssistant {
			n++
		}
	}
	r.setPhase(n, "while waiting for the model")
	reply, err := r.model.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	t := Turn{Text: reply.Text, Calls: reply.Calls}
	if a, ok := r.model.(annotated); ok {
		t.Note, t.StopAfter = a.turnInfo(n)
	}
	if t.Note != "" {
		_ = r.sess.Emit(ctx, noteEvent, noteInfo{Turn: n, Note: t.Note})
	}
	r.mu.Lock()
	r.cur = t
	r.mu.Unlock()
	if len(t.Calls) == 0 {
		r.view.answer(n, t)
	} else {
		r.view.turn(n, t, req.Tools)
	}
	return reply, nil
}

func (r *runner) setPhase(turn int, phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turn, r.phase = turn, phase
}

// batchStarted keeps the turn's batch to show its results, and stands for
// the person who presses stop when the scripted turn says so.
func (r *runner) batchStarted(ctx context.Context, _ *agent.RunInfo, b *toolkit.Batch) {
	r.mu.Lock()
	r.batch, r.began, r.phase = b, time.Now(), "calls"
	stopAfter := r.cur.StopAfter
	r.mu.Unlock()
	if stopAfter <= 0 {
		return
	}
	go func() {
		t := time.NewTimer(stopAfter)
		defer t.Stop()
		select {
		case <-t.C:
			r.view.printf("  (the user presses stop after %v)\n", stopAfter.Round(time.Millisecond))
			b.Cancel()
		case <-b.Done():
		}
	}()
}

// suspended hands a suspended call to the approval desk.
func (r *runner) suspended(ctx context.Context, s *toolkit.Session, res toolkit.Result) error {
	err := r.desk.suspended(ctx, s.ID(), res.Call)
	if err != nil {
		r.mu.Lock()
		r.phase = "while waiting for an approval"
		r.mu.Unlock()
	}
	return err
}

// showResults prints the results of the last batch, once.
func (r *runner) showResults() {
	r.mu.Lock()
	b, began := r.batch, r.began
	r.batch = nil
	r.mu.Unlock()
	if b != nil {
		results := b.Wait()
		r.view.results(results, time.Since(began))
	}
}

// where says what the run was doing when its context ended.
func (r *runner) where() string {
	r.mu.Lock()
	phase, b := r.phase, r.batch
	r.mu.Unlock()
	if phase != "calls" || b == nil {
		return phase
	}
	results := b.Wait() // not under r.mu: suspended takes it while a batch runs
	stopped := 0
	for _, res := range results {
		if res.State == events.StateInterrupted {
			stopped++
		}
	}
	return fmt.Sprintf("%d of its %d calls interrupted", stopped, len(results))
}

// stopError says where the loop was when its context ended (Ctrl-C).
type stopError struct {
	turn  int
	where string // "while waiting for the model", "6 of its 6 calls interrupted", ...
	err   error
}

func (e *stopError) Error() string { return fmt.Sprintf("turn %d: %s: %v", e.turn, e.where, e.err) }
func (e *stopError) Unwrap() error { return e.err }

// restoreSession gives the resumed session what it had before the
// restart, and says so: the skills it loaded (kept in the durable store),
// its tool groups (kept in the groups store, read as they are) and the
// grants people added (kept in the durable store, read by the permissions
// at the session's first decision).
func (r *runner) restoreSession(ctx context.Context) error {
	loaded, err := r.loader.Restore(ctx, r.sess.ID())
	if err != nil {
		return err
	}
	active, err := r.groups.Active(ctx, r.sess.ID())
	if err != nil {
		return err
	}
	grants, err := r.store.Grants(ctx, r.sess.ID())
	if err != nil {
		return err
	}
	granted := make([]string, len(grants))
	for i, g := range grants {
		granted[i] = g.Tool
	}
	r.view.printf("  as it was: tool groups %s; skills %s; allowed for the session %s\n",
		listOrNone(active), listOrNone(loaded), listOrNone(granted))
	return nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return safeLine(strings.Join(names, ", "))
}
