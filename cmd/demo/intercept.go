package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// useInterceptors wraps every call, outermost first: permissions (read-only
// tools and the meta tools run, anything else waits for a person, and so
// does any call that names a dangerous file such as .env or ~/.ssh), eviction
// of results over 8 KiB, redaction of e-mail addresses and API keys, and
// retries of transient failures.
func useInterceptors(tk *toolkit.Toolkit, opts ...interceptors.PermissionOption) (*interceptors.Permissions, error) {
	perms := interceptors.NewPermissions(append([]interceptors.PermissionOption{
		interceptors.WithMode(interceptors.ReadOnly),
		interceptors.WithRules(
			interceptors.Rule{Tool: groups.MetaTool, Decision: interceptors.Allow},
			interceptors.Rule{Tool: skills.LoadTool, Decision: interceptors.Allow},
		),
		interceptors.WithRules(interceptors.DangerousFiles()...),
		interceptors.WithApprovalTimeout(5 * time.Minute),
	}, opts...)...)
	// export_table (-large-result) makes a generated table larger than one
	// NATS message: kept whole (not evicted) and not scanned for secrets.
	notLarge := func(t *toolkit.Tool) bool { return t.Name() != largeToolName }
	evict := interceptors.Evict(interceptors.EvictLimit(8 << 10))
	evict.Match = notLarge
	sanitize := interceptors.Sanitize(interceptors.RedactEmails(), interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0))
	sanitize.Match = notLarge
	err := tk.Use(
		perms.Interceptor(),
		evict,
		sanitize,
		interceptors.Retry(interceptors.RetryBackoff(50*time.Millisecond, time.Second)),
	)
	return perms, err
}

// decision is a person's answer to an approval request.
type decision struct {
	approve bool
	args    json.RawMessage // edited arguments, or nil
	reason  string          // why it was rejected
	always  bool            // allow the tool for the rest of the session
	// suggestion is the id of a suggested rule accepted with the approval.
	suggestion string
	who        string
}

// scriptedDecision approves, the way a person might after a look: it
// shortens the note's title (approve with edited arguments).
func scriptedDecision(req interceptors.ApprovalRequest) decision {
	var args map[string]any
	if err := json.Unmarshal(req.Args, &args); err == nil && req.Tool == "write_note" {
		args["title"] = "demo-summary"
		if edited, err := json.Marshal(args); err == nil {
			return decision{approve: true, args: edited, who: "the scripted agent (title edited to demo-summary)"}
		}
	}
	return decision{approve: true, who: "the scripted agent"}
}

// approvalDesk is where approval requests are answered: by the scripted
// agent after a pause, on the web page, or on the terminal (-approve).
// Whoever answers first wins; later answers get ErrNotPending.
type approvalDesk struct {
	perms *interceptors.Permissions
	mode  string
	pause time.Duration // how long the scripted agent leaves to the page
	view  *termView
	in    *bufio.Reader // the terminal, for -approve terminal

	mu      sync.Mutex
	reading chan readResult // the line being read from in, if any
	batches map[string]bool // batch approvals shown (batchapproval.go)
}

type readResult struct {
	line string
	err  error
}

func newApprovalDesk(perms *interceptors.Permissions, cfg *config, view *termView, in io.Reader) *approvalDesk {
	return &approvalDesk{perms: perms, mode: cfg.approve, pause: cfg.scaled(2 * time.Second), view: view, in: bufio.NewReader(in)}
}

// readLine reads an answer from the terminal until ctx ends (Ctrl-C). A
// read that ctx cut short goes on in the background: its line answers the
// next question, and no two reads ever run at once.
func (d *approvalDesk) readLine(ctx context.Context) (string, error) {
	d.mu.Lock()
	ch := d.reading
	if ch == nil {
		ch = make(chan readResult, 1)
		d.reading = ch
		go func() {
			line, err := d.in.ReadString('\n')
			ch <- readResult{line, err}
		}()
	}
	d.mu.Unlock()
	select {
	case r := <-ch:
		d.mu.Lock()
		d.reading = nil
		d.mu.Unlock()
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// suspended is told about a call that suspended: when it waits for an
// approval, the request is shown and answered as the mode says. Other
// suspensions (external tools) are answered elsewhere.
func (d *approvalDesk) suspended(ctx context.Context, session string, c toolkit.Call) error {
	var req *interceptors.ApprovalRequest
	for _, r := range d.perms.Pending(session) {
		if r.CallID == c.ID {
			req = &r
		}
	}
	if req == nil {
		return d.suspendedInBatch(ctx, session, c)
	}
	d.view.afterSuspend(c.ID, "  approval %-8s %s %s asks: %s\n", c.ID, req.Tool, req.Args, req.Reason)
	return d.answer(ctx, session, *req, "", scriptedDecision(*req))
}

// answer gets a decision on a request, from whoever the desk's mode says:
// the web page, the terminal, or the scripted agent after its pause (what
// names what it approves in its line, " the batch" for a batch).
func (d *approvalDesk) answer(ctx context.Context, session string, req interceptors.ApprovalRequest, what string, scripted decision) error {
	// A call's request prints after its wait (afterSuspend); a batch's
	// has its own line already.
	say := func(format string, args ...any) {
		if what == "" {
			d.view.afterSuspend(req.CallID, format, args...)
		} else {
			d.view.printf(format, args...)
		}
	}
	switch d.mode {
	case "page":
		say("  waiting for an answer on the web page\n")
	case "terminal":
		if what == "" {
			select {
			case <-d.view.suspendShownCh(req.CallID):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return d.askTerminal(ctx, session, req)
	default:
		if d.pause > 0 {
			say("  the scripted agent approves%s in %v unless the web page answers first\n", what, d.pause.Round(time.Millisecond))
		}
		go func() {
			t := time.NewTimer(d.pause)
			defer t.Stop()
			select {
			case <-t.C:
				_ = d.decide(session, req.CallID, scripted)
			case <-ctx.Done():
			}
		}()
	}
	return nil
}

func (d *approvalDesk) askTerminal(ctx context.Context, session string, req interceptors.ApprovalRequest) error {
	for i, s := range req.Suggestions {
		d.view.printf("  %d = approve and %s\n", i+1, lowerFirst(s.Label))
	}
	d.view.ask("  Approve? y = yes, a = always for this tool, a number = yes with that rule, other text = reject with that reason: ")
	line, err := d.readLine(ctx)
	d.view.answered()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && line == "" {
		return fmt.Errorf("reading the answer: %w", err)
	}
	switch line = strings.TrimSpace(line); line {
	case "y", "yes":
		return d.decide(session, req.CallID, decision{approve: true, who: "you"})
	case "a", "always":
		return d.decide(session, req.CallID, decision{approve: true, always: true, who: "you"})
	default:
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(req.Suggestions) {
			return d.decide(session, req.CallID, decision{approve: true, suggestion: req.Suggestions[n-1].ID, who: "you"})
		}
		return d.decide(session, req.CallID, decision{reason: line, who: "you"})
	}
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// decide hands a decision to the permissions interceptor.
func (d *approvalDesk) decide(session, call string, dec decision) error {
	var err error
	if dec.approve {
		var opts []interceptors.ApproveOption
		if dec.args != nil {
			opts = append(opts, interceptors.WithArgs(dec.args))
		}
		if dec.always {
			opts = append(opts, interceptors.AlwaysAllow())
		}
		if dec.suggestion != "" {
			opts = append(opts, interceptors.WithSuggestion(dec.suggestion))
		}
		err = d.perms.Approve(session, call, opts...)
	} else {
		err = d.perms.Reject(session, call, dec.reason)
	}
	if err != nil {
		return err
	}
	// After the request's lines, which wait for the call's wait to show.
	if dec.approve {
		d.view.resumed(session, call, "approved, running")
		d.view.afterSuspendOf(session, call, "  %sapproved %-8s by %s\n", d.view.labelOf(session), call, dec.who)
	} else {
		d.view.afterSuspendOf(session, call, "  %srejected %-8s by %s: %s\n", d.view.labelOf(session), call, dec.who, dec.reason)
	}
	return nil
}

// answerQuestions is the stand-in for the user behind the external tool
// ask_user: like any other service, it watches the events on NATS and
// submits an answer when such a call suspends.
func answerQuestions(bus *natsbus.Bus, tk *toolkit.Toolkit) (stop func(), err error) {
	sub, err := bus.Subscribe(bus.Subjects().AllOfType(events.TypeSuspend), func(ev *events.Event) {
		// On a shared server other processes' sessions pass by too: answer
		// only this toolkit's own.
		if ev.Tool != "ask_user" || !slices.Contains(tk.Sessions(), ev.Session) {
			return
		}
		sess, err := tk.Session(ev.Session)
		if err != nil {
			return
		}
		answer := "Yes, go ahead (answered by the demo's stand-in for the user, through NATS)."
		_ = sess.Submit(ev.Call, []events.Part{events.Text(answer)}, nil)
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
