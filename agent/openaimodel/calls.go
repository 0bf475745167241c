package openaimodel

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/internal/jsonpiece"
	"github.com/toolstream/toolstream/toolkit"
)

// callSet assembles the tool calls of one reply from the pieces a server
// sends, and announces them as chunks: a call's ChunkCall once its name is
// known (with its final id: the server's, or one made up when it sent none
// or one an earlier call of the reply already has), then its arguments as
// ChunkArgs. Arguments that arrive before the name wait for it.
//
// The reply's calls are in the order the model gave them: the server's
// index for each (Chat Completions), else the order they arrived in. The
// chunks number calls in the order they were announced, which is the same
// unless a server announces a call before one of a lower index.
type callSet struct {
	send  func(agent.Chunk)
	calls []*callSlot
	ids   map[string]bool
}

// callSlot is one call being assembled.
type callSlot struct {
	pos       int    // position in announcement order (the chunks' Index)
	order     int64  // the model's order: the server's index, if it gave one
	wireID    string // the id the server gave, if any
	id        string // the final id, set when announced
	name      string
	args      strings.Builder
	join      jsonpiece.Joiner // a character cut between two pieces
	sent      int              // bytes of args already sent as ChunkArgs
	announced bool
}

func newCallSet(send func(agent.Chunk)) *callSet {
	if send == nil {
		send = func(agent.Chunk) {}
	}
	return &callSet{send: send, ids: map[string]bool{}}
}

// open starts the reply's next call.
func (s *callSet) open() *callSlot {
	c := &callSlot{pos: len(s.calls)}
	s.calls = append(s.calls, c)
	return c
}

// setWireID records the server's id for c, if it has none yet.
func (s *callSet) setWireID(c *callSlot, id string) {
	if c.wireID == "" {
		c.wireID = id
	}
}

// setName gives c its name (the first non-empty one counts) and announces
// it.
func (s *callSet) setName(c *callSlot, name string) {
	if c.name == "" && name != "" {
		c.name = name
		s.announce(c)
	}
}

// addRaw appends a streamed piece of c's arguments: raw as the server
// wrote it (a JSON string), text as the SDK decoded it.
func (s *callSet) addRaw(c *callSlot, raw, text string) {
	s.appendArgs(c, c.join.Piece(raw, text))
}

// addArgs appends a piece of c's arguments, decoded, after what the last
// streamed piece held back.
func (s *callSet) addArgs(c *callSlot, piece string) {
	s.appendArgs(c, c.join.Flush()+piece)
}

func (s *callSet) appendArgs(c *callSlot, piece string) {
	if piece == "" {
		return
	}
	c.args.WriteString(piece)
	s.flush(c)
}

// wholeArgs reports whether c's arguments so far are a whole JSON object,
// which no further piece can continue.
func (c *callSlot) wholeArgs() bool {
	a := strings.TrimSpace(c.args.String())
	return len(a) > 1 && a[0] == '{' && json.Valid([]byte(a))
}

// finalArgs sets c's whole arguments as the server finally states them.
// When they continue what was streamed, the rest goes out as a chunk;
// when they contradict it (a server's bug), they win in the reply.
func (s *callSet) finalArgs(c *callSlot, args string) {
	c.join.Reset() // what a piece held back is in args, whole
	have := c.args.String()
	switch {
	case args == have:
	case strings.HasPrefix(args, have):
		s.addArgs(c, args[len(have):])
	default:
		c.args.Reset()
		c.args.WriteString(args)
		c.sent = c.args.Len()
	}
}

func (s *callSet) announce(c *callSlot) {
	if c.announced || c.name == "" {
		return
	}
	c.announced = true
	c.id = c.wireID
	if c.id == "" || s.ids[c.id] {
		c.id = newCallID()
	}
	s.ids[c.id] = true
	s.send(agent.Chunk{Kind: agent.ChunkCall, Index: c.pos, CallID: c.id, Name: c.name})
	s.flush(c)
}

func (s *callSet) flush(c *callSlot) {
	if !c.announced || c.sent >= c.args.Len() {
		return
	}
	s.send(agent.Chunk{Kind: agent.ChunkArgs, Index: c.pos, Text: c.args.String()[c.sent:]})
	c.sent = c.args.Len()
}

// result returns the calls in the model's order. A call whose name never
// came cannot be run or answered: the reply is malformed. When the reply
// was cut at the token limit (cut), its last call is the one being written:
// arguments that never came stay blank instead of {}, so that the loop
// does not take it for a whole call without arguments.
func (s *callSet) result(cut bool) ([]toolkit.Call, error) {
	if len(s.calls) == 0 {
		return nil, nil
	}
	for _, c := range s.calls {
		s.addArgs(c, "") // what a piece held back: the text ends here
	}
	ordered := slices.Clone(s.calls)
	slices.SortStableFunc(ordered, func(a, b *callSlot) int { return cmp.Compare(a.order, b.order) })
	out := make([]toolkit.Call, len(ordered))
	for i, c := range ordered {
		if c.name == "" {
			return nil, malformed("tool call %d (id %q) has no function name", c.pos, c.wireID)
		}
		args := json.RawMessage(c.args.String())
		if !cut || i < len(ordered)-1 {
			args = orEmptyObject(args)
		}
		out[i] = toolkit.Call{ID: c.id, Name: c.name, Args: args}
	}
	return out, nil
}
