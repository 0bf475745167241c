package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// elicitFunc answers a server's elicitation request.
type elicitFunc = func(ctx context.Context, server string, req *mcp.ElicitParams) (*mcp.ElicitResult, error)

// WithElicitation answers the server's elicitation requests
// (elicitation/create) with f: accept with content, decline or cancel.
// server is the server's name; ctx carries the toolstream call the request
// is attributed to, when known (toolkit.CallInfoFrom). Without it (or
// WithElicitations) the client does not advertise the capability and
// servers do not ask.
func WithElicitation(f func(ctx context.Context, server string, req *mcp.ElicitParams) (*mcp.ElicitResult, error)) ClientOption {
	return func(o *clientOptions) { o.elicit = f }
}

// WithElicitations sends the server's elicitation requests to a person
// through d, the way permission approvals go: see Elicitations.
func WithElicitations(d *Elicitations) ClientOption {
	return func(o *clientOptions) { o.elicitDesk = d }
}

// ErrNotPending is returned when no elicitation with that id waits in that
// session.
var ErrNotPending = errors.New("mcpbridge: no such elicitation is pending")

// Elicitations is an approval desk for MCP servers' elicitation requests,
// beside the permissions' one (interceptors.Permissions): each request goes
// out as an "approval" event (interceptors.ApprovalEvent, session-level like
// a batch approval) with an interceptors.ApprovalRequest as its Data:
//
//   - CallID: the toolstream call the server is serving when it asks (the
//     request's id in Accept, Decline and Cancel), Tool its tool;
//   - Reason: the server's name and message (and the URL, in URL mode);
//   - Args: the requested schema (form mode), which the content must match;
//   - Note: "elicitation"; Status "pending", then "approved" (accepted),
//     "rejected" (declined) or "expired" (cancelled: no answer in time, or
//     the call ended).
//
// Observers (the NATS publisher, so any page or terminal) see it; code
// answers with Accept, Decline or Cancel. One Elicitations may serve several
// clients and toolkits.
type Elicitations struct {
	wait    time.Duration
	mu      sync.Mutex
	pending map[elicitKey]*elicitPending
}

type elicitKey struct{ session, id string }

type elicitPending struct {
	req interceptors.ApprovalRequest
	ch  chan *mcp.ElicitResult
}

// NewElicitations returns a desk whose requests wait at most wait for an
// answer (then they are cancelled); 0 means 5 minutes.
func NewElicitations(wait time.Duration) *Elicitations {
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	return &Elicitations{wait: wait, pending: map[elicitKey]*elicitPending{}}
}

// Pending returns the elicitations waiting in a session ("" for all),
// oldest first.
func (d *Elicitations) Pending(session string) []interceptors.ApprovalRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []interceptors.ApprovalRequest
	for k, p := range d.pending {
		if session == "" || k.session == session {
			out = append(out, p.req)
		}
	}
	slices.SortFunc(out, func(a, b interceptors.ApprovalRequest) int { return a.Expires.Compare(b.Expires) })
	return out
}

// Accept answers an elicitation with content (the requested schema's
// properties; nil in URL mode).
func (d *Elicitations) Accept(session, id string, content map[string]any) error {
	return d.answer(session, id, &mcp.ElicitResult{Action: "accept", Content: content})
}

// Decline refuses an elicitation: the server is told the person said no.
func (d *Elicitations) Decline(session, id string) error {
	return d.answer(session, id, &mcp.ElicitResult{Action: "decline"})
}

// Cancel dismisses an elicitation without a choice.
func (d *Elicitations) Cancel(session, id string) error {
	return d.answer(session, id, &mcp.ElicitResult{Action: "cancel"})
}

func (d *Elicitations) answer(session, id string, r *mcp.ElicitResult) error {
	d.mu.Lock()
	p, ok := d.pending[elicitKey{session, id}]
	if ok {
		delete(d.pending, elicitKey{session, id})
	}
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: session %q, id %q", ErrNotPending, session, id)
	}
	p.ch <- r
	return nil
}

// ask publishes a request and waits for its answer.
func (d *Elicitations) ask(ctx context.Context, c *Client, call toolkit.CallInfo, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	sess, err := c.tk.Session(call.Session)
	if err != nil {
		return nil, err
	}
	// The server's words go to a person: shown so that none can hide or
	// turn text around (interceptors.VisibleText).
	reason := fmt.Sprintf("MCP server %q asks: %s", c.name, interceptors.VisibleText(p.Message))
	if p.URL != "" {
		reason += " (open " + interceptors.VisibleText(p.URL) + ")"
	}
	var schema json.RawMessage
	if p.RequestedSchema != nil {
		schema, _ = json.Marshal(p.RequestedSchema)
		schema = interceptors.VisibleJSON(schema)
	}
	pd := &elicitPending{ch: make(chan *mcp.ElicitResult, 1), req: interceptors.ApprovalRequest{
		Session: call.Session, Tool: call.Tool, Args: schema, Reason: reason,
		Status: "pending", Note: "elicitation", Expires: time.Now().Add(d.wait),
	}}
	d.mu.Lock()
	id := call.CallID
	for n := 2; d.pending[elicitKey{call.Session, id}] != nil; n++ {
		id = call.CallID + "/elicitation-" + strconv.Itoa(n)
	}
	pd.req.CallID = id
	key := elicitKey{call.Session, id}
	d.pending[key] = pd
	d.mu.Unlock()
	release := func() {
		d.mu.Lock()
		if d.pending[key] == pd {
			delete(d.pending, key)
		}
		d.mu.Unlock()
	}
	defer release()

	_ = sess.Emit(ctx, interceptors.ApprovalEvent, pd.req)
	timer := time.NewTimer(d.wait)
	defer timer.Stop()
	var res *mcp.ElicitResult
	note := ""
	select {
	case res = <-pd.ch:
	case <-timer.C:
		res, note = &mcp.ElicitResult{Action: "cancel"}, fmt.Sprintf("no answer within %v", d.wait)
	case <-ctx.Done():
		res, note = &mcp.ElicitResult{Action: "cancel"}, "the call ended"
	}
	out := pd.req
	out.Expires, out.Note = time.Time{}, "elicitation"
	switch res.Action {
	case "accept":
		out.Status = "approved"
	case "decline":
		out.Status = "rejected"
	default:
		out.Status = "expired"
		if note != "" {
			out.Note += ": " + note
		}
	}
	_ = sess.Emit(ctx, interceptors.ApprovalEvent, out)
	return res, nil
}

// elicitationHandler returns the SDK handler, nil when nothing answers.
func (c *Client) elicitationHandler() func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	f, desk := c.o.elicit, c.o.elicitDesk
	if f == nil && desk == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		call, ok := c.callOf(ctx)
		if ok {
			if cctx := c.callContext(call); cctx != nil {
				// End the wait when the call ends, whichever context the
				// SDK gave (the connection's, for a request on the wire).
				var stop context.CancelFunc
				ctx, stop = context.WithCancel(ctx)
				defer context.AfterFunc(cctx, stop)()
				defer stop()
			}
		}
		if f != nil {
			if ok {
				ctx = toolkitCallContext(ctx, call)
			}
			return f(ctx, c.name, req.Params)
		}
		if !ok {
			// Nobody to ask on behalf of: no call of this server runs.
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return desk.ask(ctx, c, call, req.Params)
	}
}

// inflight is a call of the server's tools in progress.
type inflight struct {
	info toolkit.CallInfo
	ctx  context.Context
	seq  uint64
}

// callOf attributes an elicitation to a toolstream call: the one in ctx
// (the SDK passes the call's context when the server asks through an
// input-required result), else the only call of this server in progress,
// else the one started last.
func (c *Client) callOf(ctx context.Context) (toolkit.CallInfo, bool) {
	if ci, ok := toolkit.CallInfoFrom(ctx); ok {
		return ci, true
	}
	var best *inflight
	c.inflight.Range(func(_, v any) bool {
		f := v.(*inflight)
		if best == nil || f.seq > best.seq {
			best = f
		}
		return true
	})
	if best == nil {
		return toolkit.CallInfo{}, false
	}
	return best.info, true
}

// callContext returns the context of a call in progress, nil if none.
func (c *Client) callContext(ci toolkit.CallInfo) context.Context {
	var out context.Context
	c.inflight.Range(func(_, v any) bool {
		f := v.(*inflight)
		if f.info.Session == ci.Session && f.info.CallID == ci.CallID {
			out = f.ctx
			return false
		}
		return true
	})
	return out
}

// elicitCallKey carries a CallInfo for a WithElicitation function when ctx is not the call's.
type elicitCallKey struct{}

func toolkitCallContext(ctx context.Context, ci toolkit.CallInfo) context.Context {
	if _, ok := toolkit.CallInfoFrom(ctx); ok {
		return ctx
	}
	return context.WithValue(ctx, elicitCallKey{}, ci)
}

// ElicitingCall returns the toolstream call an elicitation passed to an
// WithElicitation function is attributed to.
func ElicitingCall(ctx context.Context) (toolkit.CallInfo, bool) {
	if ci, ok := toolkit.CallInfoFrom(ctx); ok {
		return ci, true
	}
	ci, ok := ctx.Value(elicitCallKey{}).(toolkit.CallInfo)
	return ci, ok
}
