package mcpbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/schema"
	"github.com/toolstream/toolstream/toolkit"
)

// ErrServerClosed is the cause of the interruption of calls that were
// running when Server.Close was called.
var ErrServerClosed = errors.New("mcpbridge: the MCP server is closing")

// defaultSessionPrefix starts the toolstream session id of every MCP session
// a Server serves, so that observers (the live page, NATS subscribers) can
// tell MCP-driven calls apart.
const defaultSessionPrefix = "mcp-"

// Server serves a toolkit's tools to MCP clients: tools/list lists the
// toolkit's registered tools, and tools/call runs one call through the
// toolkit (validation, interceptors, visibility, events), in a toolstream
// session of its own per MCP session. docs/mcp.md ("Server") maps the two
// protocols onto each other.
//
// One Server may serve any number of connections at once (stdio, several
// HTTP clients); its methods are safe for concurrent use.
type Server struct {
	tk     *toolkit.Toolkit
	srv    *mcp.Server
	opts   serverOptions
	http   *httpAuth // the HTTP handler's origin and token checks
	callID atomic.Uint64
	idBase string // random, so call ids do not repeat across Servers

	removeObserver func()
	closing        context.Context // cancelled by Close: interrupts the calls in flight
	closeCalls     context.CancelFunc
	inflight       sync.Map // callKey -> *mcpCall: calls that relay progress or approvals

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*toolkit.Session
	tools    map[string]*listedOutput // names listed now (Sync), with their output schema (nil: none)
	synced   uint64                   // the ticket of the Sync that set tools
	syncSeq  atomic.Uint64            // Sync's tickets
	closed   bool
	watchers sync.WaitGroup
}

type callKey struct{ session, call string }

// ServerOption configures a Server.
type ServerOption func(*serverOptions)

type serverOptions struct {
	impl          mcp.Implementation
	instructions  string
	sessionPrefix string
	logger        *slog.Logger
	perms         *interceptors.Permissions
	callContext   func(ctx context.Context, req *mcp.CallToolRequest) context.Context
	maxResult     int            // WithMaxResultSize
	origins       []string       // WithAllowedOrigins
	authz         *Authorization // WithAuthorization
}

// WithImplementation sets the name and version the server reports to
// clients (default "toolstream" and "dev").
func WithImplementation(name, version string) ServerOption {
	return func(o *serverOptions) { o.impl.Name, o.impl.Version = name, version }
}

// WithInstructions sets the instructions the server gives clients at
// initialization.
func WithInstructions(s string) ServerOption {
	return func(o *serverOptions) { o.instructions = s }
}

// WithSessionPrefix replaces the default session prefix, "mcp-". The toolstream session id
// of an MCP session is the prefix followed by the MCP session id (or by a
// random id when the transport has none, as stdio), checked with
// events.CheckSessionID.
func WithSessionPrefix(p string) ServerOption {
	return func(o *serverOptions) { o.sessionPrefix = p }
}

// WithLogger sets the go-sdk's logger for the server.
func WithLogger(l *slog.Logger) ServerOption {
	return func(o *serverOptions) { o.logger = l }
}

// WithPermissions lets a call's permission "ask" (the permissions interceptor
// p, installed on the toolkit) become an MCP elicitation to the client that
// made the call, when the client supports elicitation and the negotiated
// protocol allows server-initiated requests: accept approves the call, decline
// or cancel rejects it. Without a client that can answer, the request waits on
// p's approval desk as usual (Approve or Reject from code or a page).
func WithPermissions(p *interceptors.Permissions) ServerOption {
	return func(o *serverOptions) { o.perms = p }
}

// WithCallContext sets a function that derives the context of each MCP call
// before it runs, for example to attach the user (toolkit.WithUser) from the
// request's HTTP headers or token (req.Extra).
func WithCallContext(f func(ctx context.Context, req *mcp.CallToolRequest) context.Context) ServerOption {
	return func(o *serverOptions) { o.callContext = f }
}

// NewServer returns a Server for tk's tools as they are registered now; call
// Server.Sync after registering or removing tools. Close it when done: it
// closes the toolstream sessions it opened and detaches from tk.
func NewServer(tk *toolkit.Toolkit, opts ...ServerOption) (*Server, error) {
	if tk == nil {
		return nil, errors.New("mcpbridge: NewServer needs a toolkit")
	}
	o := serverOptions{
		impl:          mcp.Implementation{Name: "toolstream", Version: "dev"},
		sessionPrefix: defaultSessionPrefix,
	}
	for _, f := range opts {
		f(&o)
	}
	// The longest id a session gets is the prefix and 24 hex digits (or an
	// SDK session id, which falls back to those when too long).
	if err := events.CheckSessionID(o.sessionPrefix + strings.Repeat("0", 24)); err != nil {
		return nil, fmt.Errorf("mcpbridge: session prefix %q: %w", o.sessionPrefix, err)
	}
	ha, err := checkHTTPOptions(&o)
	if err != nil {
		return nil, err
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("mcpbridge: %w", err)
	}
	s := &Server{
		tk:       tk,
		opts:     o,
		http:     ha,
		idBase:   hex.EncodeToString(b[:]),
		sessions: make(map[*mcp.ServerSession]*toolkit.Session),
		tools:    make(map[string]*listedOutput),
	}
	s.closing, s.closeCalls = context.WithCancel(context.Background())
	impl := o.impl
	s.srv = mcp.NewServer(&impl, &mcp.ServerOptions{
		Instructions: o.instructions,
		Logger:       o.logger,
		// Tools only: no logging capability (deprecated by the newest
		// revision) and tools advertised even before the first is added.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	if err := s.Sync(); err != nil {
		return nil, err
	}
	s.removeObserver = tk.ObserveInline(toolkit.ObserverFunc(s.observe))
	return s, nil
}

// MCP returns the go-sdk server, for what this package does not cover
// (prompts, resources, middleware). Its tools are this Server's: do not add
// or remove tools on it directly.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Sync makes tools/list match the toolkit's registered tools again (after
// Register, Replace or Remove): changed tools are replaced, removed ones
// dropped, and the SDK tells clients with notifications/tools/list_changed
// where the negotiated protocol allows it. Tools a session may not see
// (groups, skills) are still listed: see docs/mcp.md. A tool MCP cannot
// carry (an input schema that is not an object, or one the SDK refuses)
// makes it return an error naming the tool, the list left as it was.
func (s *Server) Sync() error {
	ticket, defs := s.readDefinitions()
	return s.apply(ticket, defs)
}

// readDefinitions reads the toolkit's definitions for a Sync, with the
// ticket that orders it. Syncs may overlap: the one that read the
// definitions later wins, whatever the order they apply in (a ticket taken
// before reading).
func (s *Server) readDefinitions() (ticket uint64, defs []toolkit.Definition) {
	ticket = s.syncSeq.Add(1)
	return ticket, s.tk.Definitions()
}

// apply makes tools/list match defs, unless a Sync that read later applied
// already.
func (s *Server) apply(ticket uint64, defs []toolkit.Definition) error {
	tools := make([]*mcp.Tool, 0, len(defs))
	outputs := make(map[string]*listedOutput, len(defs))
	s.mu.Lock()
	prev := s.tools
	s.mu.Unlock()
	var trial *mcp.Server
	for _, d := range defs {
		if len(d.OutputSchema) > 0 {
			outputs[d.Name] = compileListedOutput(prev[d.Name], d.OutputSchema)
		}
		t, err := mcpTool(d)
		if err == nil {
			if trial == nil {
				trial = mcp.NewServer(&mcp.Implementation{Name: "trial"}, nil)
			}
			err = tryAddTool(trial, t)
		}
		if err != nil {
			return err
		}
		tools = append(tools, t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ticket < s.synced {
		return nil // a later Sync applied a newer reading already
	}
	s.synced = ticket
	keep := make(map[string]*listedOutput, len(tools))
	for _, t := range tools {
		keep[t.Name] = outputs[t.Name]
		s.srv.AddTool(t, s.handle)
	}
	var gone []string
	for name := range s.tools {
		if _, ok := keep[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	s.tools = keep
	return nil
}

// tryAddTool adds t to a server of its own, to learn whether the SDK takes
// it: its AddTool panics on what it refuses (an x-mcp-header annotation on a
// property that is not a string, integer or boolean, a header name that is
// not an HTTP token, the same header twice), and Sync must not panic, nor
// stop half-way through the list.
func tryAddTool(trial *mcp.Server, t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcpbridge: tool %q cannot be served over MCP: %v", t.Name, r)
		}
	}()
	trial.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	return nil
}

// mcpTool maps a toolkit definition to an MCP tool: the schemas as they are
// (the toolkit validates arguments itself), the hints as annotations.
func mcpTool(d toolkit.Definition) (*mcp.Tool, error) {
	var probe struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(d.Parameters, &probe); err != nil || probe.Type != "object" {
		return nil, fmt.Errorf("mcpbridge: tool %q: MCP needs an input schema of type \"object\"", d.Name)
	}
	t := &mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: d.Parameters}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		t.Title = a.Title
		t.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: &a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   &a.OpenWorldHint,
		}
	}
	return t, nil
}

// Serve serves one connection over t (for example &mcp.StdioTransport{} or
// one end of mcp.NewInMemoryTransports) until the client disconnects, ctx
// ends or the Server is closed (nil for the last two); the connection's
// toolstream session is closed with it.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	err := s.srv.Run(ctx, t)
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // ended on purpose
	}
	return err
}

// Close closes the MCP sessions this Server serves and the toolstream
// sessions it opened (their suspended calls are reported as interrupted),
// and detaches it from the toolkit. Calls after Close fail with an error
// result.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	// A session closes only once its requests have returned: interrupt them.
	s.closeCalls()
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
	}
	s.watchers.Wait()
	s.mu.Lock()
	left := s.sessions
	s.sessions = map[*mcp.ServerSession]*toolkit.Session{}
	s.mu.Unlock()
	for _, ts := range left {
		ts.Close()
	}
	s.removeObserver()
	return nil
}

// session returns the toolstream session of an MCP session, opening it on
// the first call; a goroutine closes it when the MCP session ends.
func (s *Server) session(ss *mcp.ServerSession) (*toolkit.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrServerClosed
	}
	if ts, ok := s.sessions[ss]; ok {
		return ts, nil
	}
	id := s.opts.sessionPrefix + ss.ID()
	if ss.ID() == "" || events.CheckSessionID(id) != nil {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		id = s.opts.sessionPrefix + hex.EncodeToString(b[:])
	}
	ts, err := s.tk.Session(id)
	if err != nil {
		return nil, err
	}
	s.sessions[ss] = ts
	s.watchers.Add(1)
	go func() {
		defer s.watchers.Done()
		_ = ss.Wait()
		s.mu.Lock()
		ts, ok := s.sessions[ss]
		delete(s.sessions, ss)
		s.mu.Unlock()
		if ok {
			ts.Close()
		}
	}()
	return ts, nil
}

// handle runs one tools/call through the toolkit.
func (s *Server) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ts, err := s.session(req.Session)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(s.closing, func() { cancel(ErrServerClosed) })()
	if f := s.opts.callContext; f != nil {
		ctx = f(ctx, req)
	}
	args := req.Params.Arguments
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}") // MCP's arguments are optional
	}
	call := toolkit.Call{
		ID:   "mcp-" + s.idBase + "-" + strconv.FormatUint(s.callID.Add(1), 10),
		Name: req.Params.Name,
		Args: args,
	}
	token := req.Params.GetProgressToken()
	elicit := s.opts.perms != nil && canElicit(req)
	var res toolkit.Result
	if token == nil && !elicit {
		// The fast path: nothing to relay while the call runs.
		res = ts.Run(ctx, []toolkit.Call{call})[0]
	} else {
		res = s.relay(ctx, req, ts, call, token, elicit)
	}
	return s.result(res), nil
}

// listedOutput is the output schema a tool is listed with, compiled: the
// schema the client checks structuredContent against.
type listedOutput struct {
	raw string
	v   *schema.Validator // nil if it did not compile (the engine compiled it: not expected)
}

// compileListedOutput compiles a listed output schema, or returns prev
// when it is the same schema.
func compileListedOutput(prev *listedOutput, raw json.RawMessage) *listedOutput {
	if prev != nil && prev.raw == string(raw) {
		return prev
	}
	o := &listedOutput{raw: string(raw)}
	var js jsonschema.Schema
	if json.Unmarshal(raw, &js) == nil {
		o.v, _ = schema.Compile(&js)
	}
	return o
}

// problems validates a structured value against the listed schema.
func (o *listedOutput) problems(v json.RawMessage) []schema.Problem {
	if o.v == nil {
		return nil
	}
	inst, err := schema.Decode(v)
	if err != nil {
		return []schema.Problem{{Message: err.Error()}}
	}
	return o.v.Validate(inst)
}

// outputSchema returns the listed tool's output schema, or nil when it has
// none.
func (s *Server) outputSchema(name string) *listedOutput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools[name]
}

// canElicit reports whether the client said it takes form elicitations and
// the protocol lets the server ask in the middle of a call (the newest
// revision forbids server-initiated requests).
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	return req.ProtocolVersion() < "2026-07-28"
}

// errorResult is an isError result with one text.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
