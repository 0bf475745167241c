package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// useInterceptors wraps every call, outermost first: permissions (read-only
// tools and the meta tools run, anything else waits for a person), eviction
// of results over 8 KiB, redaction of e-mail addresses and API keys, and
// retries of transient failures.
func useInterceptors(tk *toolkit.Toolkit) (*interceptors.Permissions, error) {
	perms := interceptors.NewPermissions(
		interceptors.WithMode(interceptors.ReadOnly),
		interceptors.WithRules(
			interceptors.Rule{Tool: groups.MetaTool, Decision: interceptors.Allow},
			interceptors.Rule{Tool: skills.LoadTool, Decision: interceptors.Allow},
		),
		interceptors.WithApprovalTimeout(5*time.Minute),
	)
	err := tk.Use(
		perms.Interceptor(),
		interceptors.Evict(interceptors.EvictLimit(8<<10)),
		interceptors.Sanitize(interceptors.RedactEmails(), interceptors.RedactAPIKeys(), interceptors.SanitizeMaxBytes(0)),
		interceptors.Retry(interceptors.RetryBackoff(50*time.Millisecond, time.Second)),
	)
	return perms, err
}

// decision is a person's answer to an approval request.
type decision struct {
	approve bool
	args    json.RawMessage // edited arguments, or nil
	reason  string          // why it was rejected
	who     string
}

// approver decides on an approval request.
type approver func(ctx context.Context, req interceptors.ApprovalRequest) (decision, error)

// scriptedApprover approves, the way a person might after a look: it
// shortens the note's title (approve with edited arguments).
func scriptedApprover(_ context.Context, req interceptors.ApprovalRequest) (decision, error) {
	var args map[string]any
	if err := json.Unmarshal(req.Args, &args); err == nil && req.Tool == "write_note" {
		args["title"] = "demo-summary"
		edited, _ := json.Marshal(args)
		return decision{approve: true, args: edited, who: "the scripted agent (title edited to demo-summary)"}, nil
	}
	return decision{approve: true, who: "the scripted agent"}, nil
}

// terminalApprover asks on the terminal.
func terminalApprover(in *bufio.Reader) approver {
	return func(ctx context.Context, req interceptors.ApprovalRequest) (decision, error) {
		fmt.Print("  Approve? [y = yes, anything else = reject with that reason] ")
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return decision{}, fmt.Errorf("reading the answer: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "y" || line == "yes" {
			return decision{approve: true, who: "you"}, nil
		}
		return decision{reason: line, who: "you"}, nil
	}
}

// answerApproval prints the request waiting for call and hands the
// decision to the permissions interceptor.
func answerApproval(ctx context.Context, out *printer, session, call string, perms *interceptors.Permissions, decide approver) error {
	var req *interceptors.ApprovalRequest
	for _, r := range perms.Pending(session) {
		if r.CallID == call {
			req = &r
		}
	}
	if req == nil {
		return nil // suspended for another reason, or already decided
	}
	out.printf("  approval %-8s %s %s asks: %s\n", call, req.Tool, req.Args, req.Reason)
	d, err := decide(ctx, *req)
	if err != nil {
		return err
	}
	if !d.approve {
		out.printf("  rejected %-8s by %s: %s\n", call, d.who, d.reason)
		return perms.Reject(session, call, d.reason)
	}
	out.printf("  approved %-8s by %s\n", call, d.who)
	var opts []interceptors.ApproveOption
	if d.args != nil {
		opts = append(opts, interceptors.WithArgs(d.args))
	}
	return perms.Approve(session, call, opts...)
}
