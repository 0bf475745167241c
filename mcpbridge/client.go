package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// ToolsEvent is the type of the session-level event a client sends to every
// open session of its toolkit when a server's tools change after the first
// registration (notifications/tools/list_changed, or a reconnection that
// found another list). Its Data is a ToolsChange.
const ToolsEvent = "mcp_tools"

// ToolsChange is the Data of a ToolsEvent: toolstream names.
type ToolsChange struct {
	Server  string   `json:"server"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// Problem is an MCP tool the client could not register as it is: skipped
// (Registered false) or registered without something (an output schema the
// engine cannot compile).
type Problem struct {
	// Tool is the MCP name, Name the toolstream name.
	Tool, Name string
	// Registered says whether the tool is registered despite the problem.
	Registered bool
	Err        error
}

// Error says which tool, what became of it, and why.
func (p Problem) Error() string {
	verb := "skipped"
	if p.Registered {
		verb = "registered with a problem"
	}
	return fmt.Sprintf("MCP tool %q (%s) %s: %v", p.Tool, p.Name, verb, p.Err)
}

// ToolInfo describes a registered MCP tool.
type ToolInfo struct {
	// Name is the toolstream name, Tool the MCP one.
	Name, Tool string
	// Annotations are the server's hints as it sent them, trusted or not.
	Annotations *mcp.ToolAnnotations
}

// ClientOption configures Connect.
type ClientOption func(*clientOptions)

type clientOptions struct {
	prefix      *string
	include     []string
	exclude     []string
	presets     map[string]map[string]any
	trustHints  bool
	timeout     time.Duration
	groups      *groups.Manager
	groupActive bool
	maxAttempts int
	backoff     time.Duration
	maxBackoff  time.Duration
	dialTimeout time.Duration
	elicit      elicitFunc
	elicitDesk  *Elicitations
}

// WithPrefix sets what the server's tool names start with (default
// "mcp__<server>__"); "" gives the MCP names themselves (sanitized).
func WithPrefix(prefix string) ClientOption { return func(o *clientOptions) { o.prefix = &prefix } }

// Include registers only the MCP tools whose names match one of the
// patterns (path.Match syntax: *, ?, [a-z]).
func Include(patterns ...string) ClientOption {
	return func(o *clientOptions) { o.include = append(o.include, patterns...) }
}

// Exclude leaves out the MCP tools whose names match one of the patterns
// (path.Match syntax); it wins over Include.
func Exclude(patterns ...string) ClientOption {
	return func(o *clientOptions) { o.exclude = append(o.exclude, patterns...) }
}

// WithPresets sets arguments of the MCP tool named tool by code: they leave
// the schema the model sees and override what it sends (toolkit.Spec.Presets).
func WithPresets(tool string, presets map[string]any) ClientOption {
	return func(o *clientOptions) {
		if o.presets == nil {
			o.presets = map[string]map[string]any{}
		}
		o.presets[tool] = presets
	}
}

// TrustHints takes this server's tool annotations at their word: it is an
// option of one Connect, so a host trusts the servers it names (its own, a
// vetted one) and not the others it connects to the same toolkit. Without it,
// only the title is used: an untrusted server that says "read-only" does not
// make its tool concurrency-safe or read-only for permission rules, and its
// destructive, idempotent and open-world hints keep the engine's cautious
// defaults. With it, readOnlyHint sets Spec.ReadOnly and
// Spec.ConcurrencySafe, and the other hints set Destructive, Idempotent and
// OpenWorld.
func TrustHints() ClientOption { return func(o *clientOptions) { o.trustHints = true } }

// WithTimeout bounds each call of the server's tools (Spec.Timeout; 0 keeps
// the toolkit's default, negative means none).
func WithTimeout(d time.Duration) ClientOption { return func(o *clientOptions) { o.timeout = d } }

// WithGroup puts the server's tools in one tool group of m, named after the
// server, so that reset_tools (or m.SetActive) switches the whole server on
// and off; active is the group's default. The group follows the server's
// list as it changes; it is removed while the server has no tools.
func WithGroup(m *groups.Manager, active bool) ClientOption {
	return func(o *clientOptions) { o.groups, o.groupActive = m, active }
}

// WithReconnect sets the policy for a server that went away or could not be
// reached: the next call tries again (a new process for stdio), at most
// attempts times in a row, waiting first (base doubling up to 30 s) between
// failed attempts; calls in between answer "unavailable" at once. After the
// last failed attempt the server stays down until Client.Reconnect. Default:
// 5 attempts, 500 ms.
func WithReconnect(attempts int, base time.Duration) ClientOption {
	return func(o *clientOptions) { o.maxAttempts, o.backoff = attempts, base }
}

// WithDialTimeout bounds one connection attempt, initialization and tool
// listing included (default 30 s). A stdio server that `npx -y` must
// download first can take a minute to answer: give it 2*time.Minute (and
// Connect a context that lasts as long).
func WithDialTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.dialTimeout = d }
}

// Client is one MCP server connected to a toolkit: its tools are registered
// there and stay in sync with the server's list.
type Client struct {
	name   string
	tk     *toolkit.Toolkit
	ep     Endpoint
	o      clientOptions
	prefix string

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	syncCh chan struct{}

	nextToken atomic.Uint64
	progress  sync.Map // progress token (string) -> *stream.Emitter
	inflight  sync.Map // progress token -> *inflight

	mu         sync.Mutex
	cur        *conn         // nil while down
	connecting chan struct{} // closed when the attempt in progress ends
	down       error         // why the server is down
	attempts   int           // failed attempts in a row
	retryAt    time.Time
	closed     bool
	tools      map[string]*entry // by toolstream name
	problems   []Problem
	synced     bool // the first registration happened
	hasGroup   bool
}

// conn is one connection to the server.
type conn struct {
	sess *mcp.ClientSession
	tr   mcp.Transport
	gone chan struct{} // closed when the session ended
	err  error         // why, set before gone is closed
}

// entry is a registered tool.
type entry struct {
	mcpName string
	print   string // the MCP definition as JSON, to notice changes
	ann     *mcp.ToolAnnotations
}

// Connect connects to an MCP server and registers its tools in tk (see
// ToolName for the names). name identifies the server: letters, digits, '_'
// and '-'. Tools that cannot be registered are skipped and listed by
// Client.Problems; only a server that cannot be reached, or options that
// cannot work, make Connect fail. Close the client to disconnect and
// unregister its tools.
func Connect(ctx context.Context, tk *toolkit.Toolkit, name string, ep Endpoint, opts ...ClientOption) (*Client, error) {
	c := &Client{
		name:   name,
		tk:     tk,
		ep:     ep,
		syncCh: make(chan struct{}, 1),
		tools:  map[string]*entry{},
		o:      clientOptions{maxAttempts: 5, backoff: 500 * time.Millisecond, maxBackoff: 30 * time.Second, dialTimeout: 30 * time.Second},
	}
	for _, opt := range opts {
		opt(&c.o)
	}
	if err := toolkit.CheckToolName(name); err != nil {
		return nil, fmt.Errorf("mcpbridge: server name %q: letters, digits, '_' and '-', 1 to 64 of them", name)
	}
	if tk == nil || ep == nil {
		return nil, errors.New("mcpbridge: Connect needs a toolkit and an endpoint")
	}
	c.prefix = defaultPrefix(name)
	if c.o.prefix != nil {
		c.prefix = *c.o.prefix
	}
	if err := checkPrefix(c.prefix); err != nil {
		return nil, err
	}
	for _, p := range slices.Concat(c.o.include, c.o.exclude) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("mcpbridge: tool pattern %q: %v", p, err)
		}
	}
	if c.o.maxAttempts < 1 {
		c.o.maxAttempts = 1
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	cn, err := c.dial(ctx)
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.cur = cn
	if err := c.sync(ctx, cn); err != nil {
		c.cancel()
		_ = cn.sess.Close()
		c.wg.Wait()
		c.unregister()
		return nil, err
	}
	c.wg.Add(1)
	go c.syncLoop()
	return c, nil
}

// Name returns the server's name.
func (c *Client) Name() string { return c.name }

// Problems returns the tools that could not be registered as they are, in
// the last synchronization with the server's list.
func (c *Client) Problems() []Problem {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.problems)
}

// Tools returns the registered tools, sorted by toolstream name.
func (c *Client) Tools() []ToolInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ToolInfo, 0, len(c.tools))
	for n, e := range c.tools {
		out = append(out, ToolInfo{Name: n, Tool: e.mcpName, Annotations: e.ann})
	}
	slices.SortFunc(out, func(a, b ToolInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Err returns why the server is down, nil while it is connected.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil {
		return nil
	}
	return c.down
}

// Reconnect connects again now if the server is down, whatever the backoff
// or the count of failed attempts, and re-synchronizes its tools.
func (c *Client) Reconnect(ctx context.Context) error {
	c.mu.Lock()
	if c.cur == nil && c.connecting == nil {
		c.attempts, c.retryAt = 0, time.Time{}
	}
	c.mu.Unlock()
	_, err := c.session(ctx)
	return err
}

// Close disconnects (a stdio server's process ends), unregisters the tools
// and the group, and waits for the client's goroutines. It returns nil: the
// goodbye to the server is best effort.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cn := c.cur
	c.cur = nil
	c.mu.Unlock()
	c.cancel()
	if cn != nil {
		// Best effort: a server that is gone cannot be told (over HTTP the
		// session's DELETE fails), and nothing is lost either way.
		_ = cn.sess.Close()
	}
	c.wg.Wait()
	c.unregister()
	return nil
}

// unregister removes the tools and the group.
func (c *Client) unregister() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hasGroup {
		_ = c.o.groups.Remove(c.name)
		c.hasGroup = false
	}
	names := make([]string, 0, len(c.tools))
	for n := range c.tools {
		names = append(names, n)
	}
	c.tk.Remove(names...)
	clear(c.tools)
}

// dial makes one connection, within the dial timeout.
func (c *Client) dial(parent context.Context) (*conn, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, c.o.dialTimeout)
	defer cancel()
	tr, err := c.ep.Transport(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: MCP server %q: %w", c.name, err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "toolstream", Version: "1"}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.requestSync() },
		ElicitationHandler:     c.elicitationHandler(),
	})
	cl.AddSendingMiddleware(keepListedTools)
	sess, err := cl.Connect(ctx, c.withProgress(tr), nil)
	if err != nil {
		return nil, c.dialFailed(parent, ctx, tr, err, start)
	}
	cn := &conn{sess: sess, tr: tr, gone: make(chan struct{})}
	// Under c.mu, so that Close (which sets closed under it, then waits for
	// the group) never sees the group grow while it waits.
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = sess.Close()
		return nil, fmt.Errorf("MCP server %q: its client was closed", c.name)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go c.watch(cn)
	return cn, nil
}

// watch notices the end of a connection: the server exited, the network
// failed, or Close.
func (c *Client) watch(cn *conn) {
	defer c.wg.Done()
	err := cn.sess.Wait()
	// Close even a session the server ended: it releases what the session
	// holds (a stdio process, the subscriptions/listen call's goroutine).
	_ = cn.sess.Close()
	why := "the connection closed"
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		why = err.Error()
	}
	if tail := stderrOf(cn.tr); tail != "" {
		why += "; its standard error ends with: " + tail
	}
	if note := sseGuardOf(cn.tr).goneNote(); note != "" {
		why += "; " + note
	}
	cn.err = fmt.Errorf("MCP server %q went away (%s)", c.name, why)
	c.lost(cn, cn.err) // before gone: a call that saw gone finds the server down
	close(cn.gone)
}

// lost marks the server down after cn ended, for why; the next call
// reconnects. The first word on a connection stays.
func (c *Client) lost(cn *conn, why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != cn {
		return
	}
	c.cur = nil
	c.down = why
	c.attempts = 0
	c.retryAt = time.Time{}
}

// session returns the live connection, reconnecting under the policy.
func (c *Client) session(ctx context.Context) (*conn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("MCP server %q is unavailable: its client was closed", c.name)
		}
		if c.cur != nil {
			cn := c.cur
			c.mu.Unlock()
			return cn, nil
		}
		if ch := c.connecting; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if c.attempts >= c.o.maxAttempts {
			err := fmt.Errorf("MCP server %q is unavailable: %v; gave up after %d attempts to reconnect", c.name, c.down, c.attempts)
			c.mu.Unlock()
			return nil, err
		}
		if wait := time.Until(c.retryAt); wait > 0 {
			err := fmt.Errorf("MCP server %q is unavailable: %v; next attempt to reconnect in %s", c.name, c.down, wait.Round(time.Millisecond))
			c.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		c.connecting = ch
		c.mu.Unlock()

		// The attempt is bounded by the dial timeout, not by the caller's
		// context: a caller that gives up does not count as a failure.
		cn, err := c.dial(c.ctx)
		c.mu.Lock()
		c.connecting = nil
		close(ch)
		switch {
		case c.closed:
			c.mu.Unlock()
			if cn != nil {
				_ = cn.sess.Close()
			}
			continue
		case err != nil:
			c.attempts++
			c.down = err
			c.retryAt = time.Now().Add(min(c.o.backoff<<min(c.attempts-1, 20), c.o.maxBackoff))
			c.mu.Unlock()
			continue
		}
		c.cur, c.down, c.attempts = cn, nil, 0
		c.mu.Unlock()
		c.requestSync() // the list may have changed while it was away
	}
}

// requestSync asks the sync loop to re-read the server's list.
func (c *Client) requestSync() {
	select {
	case c.syncCh <- struct{}{}:
	default:
	}
}

func (c *Client) syncLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.syncCh:
			c.mu.Lock()
			cn := c.cur
			c.mu.Unlock()
			if cn == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(c.ctx, c.o.dialTimeout)
			_ = c.sync(ctx, cn) // a failed listing keeps the tools as they were
			cancel()
		}
	}
}

// maxListPages bounds the pages of one tools/list (the go-sdk's servers
// send 1000 tools a page); a variable for tests (export_test.go).
var maxListPages = 1000

// listTools reads every page of the server's tool list. It does not use the
// SDK's iterator, which follows the server's cursors as long as they come:
// a next cursor that repeats an earlier one made it loop until the dial
// timeout, and forever, without a request, when the page was cached (a
// ttlMs under 2026-07-28). dropped are the tools the server listed that the
// SDK left out of its answer.
func listTools(ctx context.Context, sess *mcp.ClientSession) (list []*mcp.Tool, dropped []Problem, err error) {
	params := &mcp.ListToolsParams{}
	seen := map[string]bool{"": true}
	for pages := 1; ; pages++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var listed []*mcp.Tool
		res, err := sess.ListTools(context.WithValue(ctx, listedKey{}, &listed), params)
		if err != nil {
			return nil, nil, err
		}
		list = append(list, res.Tools...)
		dropped = append(dropped, droppedTools(listed, res.Tools)...)
		next := res.NextCursor
		switch {
		case next == "":
			return list, dropped, nil
		case seen[next]:
			return nil, nil, fmt.Errorf("the server's list never ends: page %d gives the cursor %q of an earlier page", pages, trimQuote(next, 100))
		case pages == maxListPages:
			return nil, nil, fmt.Errorf("the server's list goes on past %d pages (%d tools)", maxListPages, len(list))
		}
		seen[next] = true
		params = &mcp.ListToolsParams{Cursor: next}
	}
}

// listedKey is the context key of the slice keepListedTools fills.
type listedKey struct{}

// keepListedTools is a sending middleware of the client: it keeps the tools
// of a tools/list answer as the server sent them, before the SDK's
// ListTools leaves out those whose x-mcp-header annotations it refuses
// (logged to a logger nobody reads), so that they become problems instead
// of vanishing.
func keepListedTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := ctx.Value(listedKey{}).(*[]*mcp.Tool); ok && method == "tools/list" {
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				*p = slices.Clone(lr.Tools)
			}
		}
		return res, err
	}
}

// droppedTools are the problems of the listed tools the SDK left out of
// kept (a null entry has no name: nothing to report).
func droppedTools(listed, kept []*mcp.Tool) []Problem {
	if len(listed) == len(kept) {
		return nil
	}
	in := make(map[*mcp.Tool]bool, len(kept))
	for _, t := range kept {
		in[t] = true
	}
	var out []Problem
	for _, t := range listed {
		if t != nil && !in[t] {
			out = append(out, Problem{Tool: t.Name, Err: errors.New("the MCP SDK leaves it out of the server's list: its input schema's x-mcp-header annotations are invalid (only on string, integer or boolean properties, an HTTP header name, each header once)")})
		}
	}
	return out
}

// trimQuote cuts s to at most n bytes (on a rune boundary), marking the cut.
func trimQuote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutAt(s, n) + "..."
}

// cutNoted cuts s to at most n bytes (on a rune boundary), marking the cut
// with s's length: "… (cut: N bytes in all)".
func cutNoted(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (cut: %d bytes in all)", cutAt(s, n), len(s))
}

// cutAt returns the longest prefix of s of at most n bytes that does not
// split a rune.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// wanted reports whether the filters keep the MCP tool named n.
func (c *Client) wanted(n string) bool {
	for _, p := range c.o.exclude {
		if ok, _ := path.Match(p, n); ok {
			return false
		}
	}
	if len(c.o.include) == 0 {
		return true
	}
	for _, p := range c.o.include {
		if ok, _ := path.Match(p, n); ok {
			return true
		}
	}
	return false
}

// sync lists the server's tools and makes the registered ones match:
// added, removed and changed tools, and the group.
func (c *Client) sync(ctx context.Context, cn *conn) error {
	list, dropped, err := listTools(ctx, cn.sess)
	if err != nil {
		return fmt.Errorf("mcpbridge: listing the tools of MCP server %q: %w", c.name, err)
	}
	slices.SortFunc(list, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	var ch ToolsChange
	var problems []Problem
	for _, p := range dropped {
		if c.wanted(p.Tool) {
			p.Name = ToolName(c.prefix, p.Tool)
			problems = append(problems, p)
		}
	}
	keep := map[string]bool{}
	for _, t := range list {
		if !c.wanted(t.Name) {
			continue
		}
		name := ToolName(c.prefix, t.Name)
		if keep[name] {
			problems = append(problems, Problem{Tool: t.Name, Name: name, Err: errors.New("another tool of the server has the same toolstream name")})
			continue
		}
		print, _ := json.Marshal(t)
		old := c.tools[name]
		if old != nil && old.print == string(print) {
			keep[name] = true
			continue
		}
		if old == nil {
			if _, taken := c.tk.Tool(name); taken {
				problems = append(problems, Problem{Tool: t.Name, Name: name, Err: errors.New("a tool of that name is already registered in the toolkit (use WithPrefix)")})
				continue
			}
		}
		tool, note, err := c.newTool(name, t)
		if err != nil {
			problems = append(problems, Problem{Tool: t.Name, Name: name, Err: err})
			continue
		}
		if note != nil {
			problems = append(problems, Problem{Tool: t.Name, Name: name, Registered: true, Err: note})
		}
		add := c.tk.Add
		if old != nil {
			add = c.tk.Replace
		}
		if err := add(tool); err != nil {
			problems = append(problems, Problem{Tool: t.Name, Name: name, Err: err})
			continue
		}
		keep[name] = true
		c.tools[name] = &entry{mcpName: t.Name, print: string(print), ann: t.Annotations}
		if old != nil {
			ch.Changed = append(ch.Changed, name)
		} else {
			ch.Added = append(ch.Added, name)
		}
	}
	for name := range c.tools {
		if !keep[name] {
			ch.Removed = append(ch.Removed, name)
		}
	}
	slices.Sort(ch.Removed)
	c.syncGroup(keep)
	for _, name := range ch.Removed {
		delete(c.tools, name)
	}
	c.tk.Remove(ch.Removed...)
	c.problems = problems
	first := !c.synced
	c.synced = true
	if !first && (len(ch.Added)+len(ch.Removed)+len(ch.Changed) > 0) {
		ch.Server = c.name
		for _, id := range c.tk.Sessions() {
			if s, err := c.tk.Session(id); err == nil {
				_ = s.Emit(ctx, ToolsEvent, ch)
			}
		}
	}
	return nil
}

// syncGroup makes the server's group hold the kept tools (c.mu held).
func (c *Client) syncGroup(keep map[string]bool) {
	m := c.o.groups
	if m == nil {
		return
	}
	names := make([]string, 0, len(keep))
	for n := range keep {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		if c.hasGroup {
			_ = m.Remove(c.name)
			c.hasGroup = false
		}
		return
	}
	g := groups.Group{
		Name:        c.name,
		Description: fmt.Sprintf("Tools of the MCP server %q.", c.name),
		Tools:       names,
		Active:      c.o.groupActive,
	}
	if cn := c.cur; cn != nil {
		if ir := cn.sess.InitializeResult(); ir != nil {
			g.Instructions = ir.Instructions
			if ir.ServerInfo != nil && ir.ServerInfo.Title != "" {
				g.Description = fmt.Sprintf("Tools of the MCP server %q (%s).", c.name, ir.ServerInfo.Title)
			}
		}
	}
	var err error
	if c.hasGroup {
		err = m.Update(g)
	} else if err = m.Add(g); err == nil {
		c.hasGroup = true
	}
	if err != nil {
		c.problems = append(c.problems, Problem{Tool: "*", Name: c.name, Registered: true, Err: fmt.Errorf("group: %w", err)})
	}
}

// newTool makes the toolstream tool for an MCP tool; note is a problem that
// did not prevent it.
func (c *Client) newTool(name string, t *mcp.Tool) (tool *toolkit.Tool, note, err error) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return nil, nil, fmt.Errorf("input schema: %v", cmpErr(err, "missing"))
	}
	spec := toolkit.Spec{
		Name:        name,
		Description: t.Description,
		Title:       t.Title,
		Timeout:     c.o.timeout,
		Presets:     c.o.presets[t.Name],
	}
	if spec.Description == "" {
		spec.Description = fmt.Sprintf("Tool %q of the MCP server %q.", t.Name, c.name)
	}
	if a := t.Annotations; a != nil {
		if spec.Title == "" {
			spec.Title = a.Title
		}
		if c.o.trustHints {
			spec.ReadOnly = a.ReadOnlyHint
			spec.ConcurrencySafe = a.ReadOnlyHint
			spec.Destructive = a.DestructiveHint
			idem := a.IdempotentHint
			spec.Idempotent = &idem
			spec.OpenWorld = a.OpenWorldHint
		}
	}
	// The handler asks for structuredContent only when the tool has the
	// server's output schema: registered without it, the engine checks
	// nothing.
	h := c.handler(t.Name, false)
	if t.OutputSchema != nil {
		out, merr := json.Marshal(t.OutputSchema)
		if merr == nil {
			s := spec
			s.OutputSchema = out
			if tool, err := toolkit.NewRawTool(s, in, c.handler(t.Name, true)); err == nil {
				return tool, nil, nil
			} else if tool, err2 := toolkit.NewRawTool(spec, in, h); err2 == nil {
				return tool, fmt.Errorf("output schema ignored: %v", err), nil
			}
		}
	}
	tool, err = toolkit.NewRawTool(spec, in, h)
	return tool, nil, err
}

func cmpErr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// handler calls the MCP tool named tool; structured says the tool is
// registered with an output schema, so its results must carry
// structuredContent.
func (c *Client) handler(tool string, structured bool) toolkit.RawHandler {
	return func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
		cn, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		seq := c.nextToken.Add(1)
		tok := c.name + "-" + strconv.FormatUint(seq, 10)
		c.progress.Store(tok, stream.From(ctx))
		defer c.progress.Delete(tok)
		if ci, ok := toolkit.CallInfoFrom(ctx); ok {
			c.inflight.Store(tok, &inflight{info: ci, ctx: ctx, seq: seq})
			defer c.inflight.Delete(tok)
		}
		p := &mcp.CallToolParams{Name: tool, Arguments: args}
		p.SetProgressToken(tok)
		res, err := cn.sess.CallTool(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				// The SDK sent notifications/cancelled; the engine words it.
				return nil, ctx.Err()
			}
			var werr *jsonrpc.Error
			if errors.As(err, &werr) && werr.Code != codeRejected {
				return nil, fmt.Errorf("MCP server %q refused the call: %s", c.name, werr.Message)
			}
			return nil, c.callFailed(cn, err)
		}
		return resultParts(res, c.name, tool, structured, stream.From(ctx).SetMeta)
	}
}

// pingTimeout bounds the ping that tells a failed call on a live server
// from a server that is gone.
const pingTimeout = 2 * time.Second

// callFailed words a call that failed outside the protocol (not an error
// response from the server). If the connection is gone, or the server does
// not answer a ping, the session is closed so that its other calls fail at
// once and the next call reconnects.
func (c *Client) callFailed(cn *conn, err error) error {
	select {
	case <-cn.gone:
		return fmt.Errorf("%v during the call", cn.err)
	default:
	}
	ctx, cancel := context.WithTimeout(c.ctx, pingTimeout)
	perr := cn.sess.Ping(ctx, nil)
	cancel()
	if perr == nil {
		return fmt.Errorf("MCP server %q: the call failed: %v", c.name, err)
	}
	why := fmt.Sprintf("%v; it does not answer a ping either", err)
	if tail := stderrOf(cn.tr); tail != "" {
		why += "; its standard error ends with: " + tail
	}
	if note := sseGuardOf(cn.tr).goneNote(); note != "" {
		why += "; " + note
	}
	gone := fmt.Errorf("MCP server %q went away during the call (%s)", c.name, why)
	c.lost(cn, gone)
	_ = cn.sess.Close()
	return gone
}

// codeRejected is the code of the SDK's "rejected by transport" error: the
// request did not reach the server (an HTTP request that failed), which is
// not the server's answer.
const codeRejected = -32005
