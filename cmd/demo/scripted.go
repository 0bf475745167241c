package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// scriptedModel plays a model deterministically: a fixed sequence of
// tool-call turns that exercises every capability of the library, then an
// answer built from what the tools returned. It needs no network and no
// account.
type scriptedModel struct {
	think time.Duration // a model's latency, so that turns can be watched
	extra []scriptTurn  // turns after the script's (-large-result)
	mcp   []mcpPick     // a tool of each -mcp server, called in a turn of its own
}

func newScriptedModel(think time.Duration) *scriptedModel { return &scriptedModel{think: think} }

// Name implements agent.Namer.
func (m *scriptedModel) Name() string { return "scripted" }

// Generate implements agent.Model: the turn after the ones already in the
// conversation, streamed as a model streams (words, then each call's name
// and its arguments in two pieces).
func (m *scriptedModel) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	if m.think > 0 {
		t := time.NewTimer(m.think)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	script := m.script()
	done := scriptDone(req.Messages, script)
	if done >= len(script) {
		text := finalAnswer(req.Messages)
		streamText(req, text)
		return &agent.Reply{Text: text, Finish: agent.FinishStop}, nil
	}
	t := script[done]
	// A real model can only call what it is offered: say so when the
	// script and the tool list disagree (the toolkit would refuse too).
	for _, c := range t.Calls {
		if !offered(req.Tools, c.Name) && !t.expectsMiss(c.Name) {
			return nil, fmt.Errorf("the script calls %s, which the model is not offered now", c.Name)
		}
	}
	streamText(req, t.Text)
	for i, c := range t.Calls {
		req.Send(agent.Chunk{Kind: agent.ChunkCall, Index: i, CallID: c.ID, Name: c.Name})
		half := len(c.Args) / 2
		req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: string(c.Args[:half])})
		req.Send(agent.Chunk{Kind: agent.ChunkArgs, Index: i, Text: string(c.Args[half:])})
	}
	return &agent.Reply{Text: t.Text, Calls: append([]toolkit.Call(nil), t.Calls...), Finish: agent.FinishToolCalls}, nil
}

// scriptDone is how many turns of the script msgs have played: the turn
// after the last one msgs hold, found by its first call's id, since the
// demo's context policy leaves the first turns out of the request.
func scriptDone(msgs []agent.Message, script []scriptTurn) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != agent.RoleAssistant || len(msgs[i].Calls) == 0 {
			continue
		}
		for n, t := range script {
			if len(t.Calls) > 0 && t.Calls[0].ID == msgs[i].Calls[0].ID {
				return n + 1
			}
		}
		break
	}
	done := 0 // not the script's calls: count the replies
	for _, msg := range msgs {
		if msg.Role == agent.RoleAssistant {
			done++
		}
	}
	return done
}

// turnInfo implements annotated.
func (m *scriptedModel) turnInfo(n int) (string, time.Duration) {
	script := m.script()
	if n < 1 || n > len(script) {
		return "", 0
	}
	return script[n-1].Note, script[n-1].StopAfter
}

func (m *scriptedModel) script() []scriptTurn {
	groups := make([]string, len(m.mcp))
	for i, p := range m.mcp {
		groups[i] = p.group
	}
	turns := scriptedTurns(groups)
	if len(m.mcp) > 0 {
		turns = append(turns, mcpTurn(m.mcp))
	}
	return append(turns, m.extra...)
}

// streamText sends text a word at a time.
func streamText(req *agent.Request, text string) {
	for len(text) > 0 {
		i := strings.IndexByte(text, ' ') + 1
		if i == 0 {
			i = len(text)
		}
		req.Send(agent.Chunk{Kind: agent.ChunkText, Text: text[:i]})
		text = text[i:]
	}
}

func offered(tools []toolkit.Definition, name string) bool {
	for _, d := range tools {
		if d.Name == name {
			return true
		}
	}
	return false
}

// scriptTurn is a turn of the script and the tool names it calls on
// purpose although they are not offered (to show the model's error).
type scriptTurn struct {
	Turn
	misses []string
}

func (t scriptTurn) expectsMiss(name string) bool {
	for _, m := range t.misses {
		if m == name {
			return true
		}
	}
	return false
}

func call(id, name string, args any) toolkit.Call {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err) // the script's own literals
	}
	return toolkit.Call{ID: id, Name: name, Args: b}
}

// scriptedTurns is the script. Each turn's Note says what it shows.
// keep are the groups that are on and stay on (the -mcp servers'): the
// reset_tools of turn 1 names them, as tool_search's result asks.
func scriptedTurns(keep []string) []scriptTurn {
	reset := map[string]any{"notes": true}
	note := "tool_search finds the group that saves notes; reset_tools switches it on"
	if len(keep) > 0 {
		note += " and keeps the MCP servers' groups on"
	}
	for _, g := range keep {
		reset[g] = true
	}
	return []scriptTurn{
		{Turn: Turn{
			Note: note,
			Text: "I will need to save a note later: I look for the tools and switch them on.",
			Calls: []toolkit.Call{
				call("call_q", groups.SearchTool, map[string]any{"query": "save a note for the user", "limit": 1}),
				call("call_0", groups.MetaTool, reset),
			},
		}},
		{Turn: Turn{
			Note:  "load_skill_through_path: the file-analysis skill, which switches on the files group",
			Text:  "The file-analysis skill explains how to look at a folder; loading it.",
			Calls: []toolkit.Call{call("call_s", skills.LoadTool, map[string]any{"skillId": "file-analysis", "path": "SKILL.md"})},
		}},
		{Turn: Turn{
			Note: "three read-only calls in parallel, two mistakes the model can fix, then write_note: serial, and it waits for a person's approval",
			Text: "Counting, hashing and searching at once; then the note.",
			Calls: []toolkit.Call{
				call("call_1", "count_lines", map[string]any{"dir": "."}),
				call("call_2", "hash_files", map[string]any{"dir": ".", "limit": 12}),
				call("call_3", "search_text", map[string]any{"dir": ".", "query": "TODO", "max_matches": 5}),
				call("call_4", "count_line", map[string]any{"dir": "."}),
				call("call_5", "search_text", map[string]any{"dir": ".", "max_matches": "many"}),
				call("call_6", "write_note", map[string]any{"title": "folder overview", "text": "Lines counted, files hashed, TODOs listed. Questions to ops@example.com"}),
			},
		}, misses: []string{"count_line"}},
		{Turn: Turn{
			Note: "folder_stats fails twice and is retried; file_inventory is too large and is stored away; ask_user is external, answered outside the process",
			Text: "Sizes and the full inventory; and I check with you before going on.",
			Calls: []toolkit.Call{
				call("call_7", "folder_stats", map[string]any{"dir": "."}),
				call("call_8", "file_inventory", map[string]any{"dir": "."}),
				call("call_9", "ask_user", map[string]any{"question": "Shall I watch the folder for changes now?"}),
			},
		}},
		{Turn: Turn{
			Note:      "watch_folder runs long; the user presses stop and the call ends interrupted",
			Text:      "Watching the folder for changes.",
			Calls:     []toolkit.Call{call("call_10", "watch_folder", map[string]any{"dir": ".", "seconds": 60})},
			StopAfter: 1500 * time.Millisecond,
		}},
	}
}

var savedTo = regexp.MustCompile(`saved in full to (\S+)`)

// finalAnswer sums up the conversation the way a model would, from what the
// tools returned.
func finalAnswer(conv []agent.Message) string {
	results := map[string]string{}
	for _, m := range conv {
		if m.Role == agent.RoleTool {
			results[m.CallID] = m.Text()
		}
	}
	var b strings.Builder
	b.WriteString("Done. ")
	if r, ok := results["call_1"]; ok {
		var counts []langCount
		if json.Unmarshal([]byte(r), &counts) == nil && len(counts) > 0 {
			fmt.Fprintf(&b, "Mostly %s (%d lines in %d files). ", counts[0].Language, counts[0].Lines, counts[0].Files)
		}
	}
	if r, ok := results["call_7"]; ok {
		first, _, _ := strings.Cut(r, "\n")
		fmt.Fprintf(&b, "%s ", strings.TrimSuffix(first, " Largest:"))
	}
	if m := savedTo.FindStringSubmatch(results["call_8"]); m != nil {
		fmt.Fprintf(&b, "The full inventory is in %s. ", m[1])
	}
	if strings.Contains(results["call_6"], "saved") {
		b.WriteString("The note is saved. ")
	}
	if r, ok := results["call_10"]; ok && strings.Contains(r, "interrupted") {
		b.WriteString("I stopped watching when you asked. ")
	}
	for i := 1; ; i++ {
		r, ok := results[fmt.Sprintf("call_m%d", i)]
		if !ok {
			break
		}
		fmt.Fprintf(&b, "The MCP server answered: %s ", clipRunes(strings.TrimSpace(r), 80))
	}
	return strings.TrimSpace(b.String())
}
