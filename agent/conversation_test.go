package agent_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// A conversation survives JSON unchanged: text, images, JSON results,
// calls with raw arguments, error flags and adapter data.
func TestConversationJSONRoundTrip(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 255}
	jsonPart, _ := events.JSON(map[string]any{"n": int64(12345678901234567)})
	conv := &agent.Conversation{System: "Be brief.", Messages: []agent.Message{
		{Role: agent.RoleUser, Content: []events.Part{events.Text("What is in this picture?"), events.Binary("image/png", png)}},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("Let me look.")},
			Calls: []toolkit.Call{call("c1", "inspect", `{"big":12345678901234567890,"s":"\u00e9"}`), call("c2", "count", `{}`)},
			Extra: json.RawMessage(`{"reasoning":"opaque"}`)},
		{Role: agent.RoleTool, CallID: "c1", Tool: "inspect", Content: []events.Part{events.Text("a cat"), events.Binary("image/jpeg", png)}},
		{Role: agent.RoleTool, CallID: "c2", Tool: "count", Content: []events.Part{jsonPart}, IsError: true},
		{Role: agent.RoleAssistant, Content: []events.Part{events.Text("A cat.")}},
	}}
	data, err := json.Marshal(conv)
	if err != nil {
		t.Fatal(err)
	}
	var back agent.Conversation
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(data) {
		t.Fatalf("JSON changed on a round trip:\n%s\n%s", data, again)
	}
	if !reflect.DeepEqual(normalize(conv), normalize(&back)) {
		t.Fatalf("round trip differs:\n%+v\n%+v", conv, &back)
	}
	if !strings.Contains(string(data), `"big":12345678901234567890`) {
		t.Errorf("arguments were re-encoded: %s", data)
	}
}

// normalize compacts raw JSON so that DeepEqual compares values.
func normalize(c *agent.Conversation) *agent.Conversation {
	out := *c
	out.Messages = append([]agent.Message(nil), c.Messages...)
	for i := range out.Messages {
		m := &out.Messages[i]
		m.Content = append([]events.Part(nil), m.Content...)
		for j := range m.Content {
			if len(m.Content[j].JSON) > 0 {
				m.Content[j].JSON = compact(m.Content[j].JSON)
			}
		}
		m.Calls = append([]toolkit.Call(nil), m.Calls...)
		for j := range m.Calls {
			m.Calls[j].Args = compact(m.Calls[j].Args)
		}
		if len(m.Extra) > 0 {
			m.Extra = compact(m.Extra)
		}
	}
	return &out
}

func compact(b json.RawMessage) json.RawMessage {
	var buf strings.Builder
	var v any
	_ = json.Unmarshal(b, &v)
	e := json.NewEncoder(&buf)
	_ = e.Encode(v)
	return json.RawMessage(strings.TrimSpace(buf.String()))
}

func TestConversationCheck(t *testing.T) {
	asst := func(ids ...string) agent.Message {
		m := agent.Message{Role: agent.RoleAssistant}
		for _, id := range ids {
			m.Calls = append(m.Calls, call(id, "t", "{}"))
		}
		return m
	}
	tool := func(id string) agent.Message { return agent.Message{Role: agent.RoleTool, CallID: id} }
	user := agent.UserText("hi")
	cases := []struct {
		name string
		msgs []agent.Message
		want string // "" for valid
	}{
		{"plain", []agent.Message{user, asst(), user}, ""},
		{"answered calls", []agent.Message{user, asst("a", "b"), tool("b"), tool("a"), asst()}, ""},
		{"unknown role", []agent.Message{{Role: "system"}}, `unknown role "system"`},
		{"open call at the end", []agent.Message{user, asst("a")}, "without results"},
		{"user before results", []agent.Message{user, asst("a"), user}, "have no result"},
		{"result for nothing", []agent.Message{user, tool("a")}, `call "a", which`},
		{"answered twice", []agent.Message{user, asst("a"), tool("a"), tool("a")}, `call "a", which`},
		{"result of an older turn", []agent.Message{user, asst("a"), tool("a"), asst("b"), tool("a"), tool("b")}, `call "a", which`},
		{"duplicate id", []agent.Message{user, asst("a", "a")}, "used twice"},
		{"empty id", []agent.Message{user, asst("")}, "no id"},
		{"user with calls", []agent.Message{{Role: agent.RoleUser, Calls: []toolkit.Call{call("a", "t", "")}}}, "user message has tool calls"},
	}
	for _, c := range cases {
		err := (&agent.Conversation{Messages: c.msgs}).Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "3"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "nonsense", "Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "-4"}, 0},
		{map[string]string{"Retry-After": "1e300"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{nil, 0},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.h {
			h.Set(k, v)
		}
		if got := agent.RetryAfter(h, now); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
	if agent.RetryAfter(nil, now) != 0 {
		t.Error("nil header")
	}
	for code, want := range map[int]bool{400: false, 401: false, 404: false, 408: true, 409: true, 429: true, 500: true, 503: true, 529: true} {
		if agent.RetryableStatus(code) != want {
			t.Errorf("RetryableStatus(%d) = %v", code, !want)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "0.5", "Wed, 21 Oct 2026 07:28:00 GMT", "-1", "1e308", "NaN", "Inf", ""} {
		f.Add(s, s)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{"Retry-After": {ra}, "Retry-After-Ms": {ms}}
		if d := agent.RetryAfter(h, now); d < 0 {
			t.Fatalf("negative wait %v for %q, %q", d, ra, ms)
		}
	})
}

// FuzzConversationJSON: a stored conversation, whatever its bytes, decodes
// without a panic; one that decodes marshals to JSON that decodes to the
// same conversation (it marshals the same again) and Check judges it
// alike, so storing it between runs changes nothing.
func FuzzConversationJSON(f *testing.F) {
	for _, s := range []string{
		`{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","calls":[{"id":"c1","name":"t","arguments":{"a" : [1, 2]}},{"id":"c2","name":"t"}]},` +
			`{"role":"tool","call_id":"c1","tool":"t","content":[{"type":"json","json":{"b":"\u003c"}}],"is_error":true},{"role":"tool","call_id":"c2","content":[{"type":"binary","media_type":"image/png","data":"iVBORw=="}]}]}`,
		`{"messages":[{"role":"assistant","extra":{"x":[1]},"content":[{"type":"text"}]}]}`,
		`{"messages":null}`, `null`, `{"messages":[{"role":"tool","call_id":"x"}]}`,
		`{"messages":[{"role":"assistant","calls":[{"id":"c1","name":"t","arguments_text":"{\"a\":"},{"id":"c2","name":"t","arguments":{},"arguments_text":"x"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c1 agent.Conversation
		if json.Unmarshal(data, &c1) != nil {
			return
		}
		err1 := c1.Check()
		b1, err := json.Marshal(&c1)
		if err != nil {
			t.Fatalf("a decoded conversation does not marshal: %v", err)
		}
		var c2 agent.Conversation
		if err := json.Unmarshal(b1, &c2); err != nil {
			t.Fatalf("the conversation's own JSON does not decode: %v\n%s", err, b1)
		}
		b2, err := json.Marshal(&c2)
		if err != nil || string(b1) != string(b2) {
			t.Fatalf("stored again it changed:\n%s\n%s (%v)", b1, b2, err)
		}
		if err2 := c2.Check(); (err1 == nil) != (err2 == nil) {
			t.Fatalf("Check said %v before storing, %v after\n%s", err1, err2, b1)
		}
	})
}

// TestConversationKeepsInvalidArguments: a conversation holds calls as the
// model wrote them, arguments that are not JSON included (the toolkit
// answered them with its argument error; a call cut at the token limit
// keeps what came). It must still store and come back unchanged:
// json.Marshal refused such arguments as a json.RawMessage, so saving the
// conversation (durable.SaveEachTurn, a UI's store) failed for every later
// turn.
func TestConversationKeepsInvalidArguments(t *testing.T) {
	calls := []toolkit.Call{
		{ID: "c1", Name: "t", Args: json.RawMessage(`{"city":"Ro`)},
		{ID: "c2", Name: "t", Args: json.RawMessage(`{"city":"Rome"}`)},
		{ID: "c3", Name: "t"},
		{ID: "c4", Name: "t", Args: json.RawMessage("not json at all \x01")},
		{ID: "c5", Name: "t", Args: json.RawMessage(`"a string"`)},
	}
	conv := agent.NewConversation("s", "go")
	conv.Add(agent.Message{Role: agent.RoleAssistant, Calls: calls})
	for _, c := range calls {
		conv.Add(agent.Message{Role: agent.RoleTool, CallID: c.ID, Tool: c.Name, IsError: true, Content: []events.Part{events.Text("Error: bad")}})
	}
	b, err := json.Marshal(conv)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back agent.Conversation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(back.Messages[1].Calls, calls) {
		t.Errorf("calls came back as %q, want %q\n%s", back.Messages[1].Calls, calls, b)
	}
	if !reflect.DeepEqual(back, *conv) {
		t.Errorf("the conversation changed:\n%+v\n%+v", back, *conv)
	}
	if !strings.Contains(string(b), `{"id":"c2","name":"t","arguments":{"city":"Rome"}}`) {
		t.Errorf("valid arguments are not written as JSON: %s", b)
	}
}

// Message.Text sets a JSON value off from the text and values beside it
// (an MCP resource link and a structured result were read glued:
// `{"type":"resource_link",...}{"files":1}`); pieces of one text stream
// join as they are.
func TestMessageTextSetsValuesApart(t *testing.T) {
	link := events.Part{Type: events.PartJSON, JSON: json.RawMessage(`{"type":"resource_link","uri":"file:///a.txt"}`)}
	value := events.Part{Type: events.PartJSON, JSON: json.RawMessage(`{"files":1}`)}
	m := agent.Message{Role: agent.RoleTool, Content: []events.Part{events.Text("found "), events.Text("one:"), link, value, events.Text("done"), events.Binary("image/png", []byte{1})}}
	want := "found one:\n{\"type\":\"resource_link\",\"uri\":\"file:///a.txt\"}\n{\"files\":1}\ndone"
	if got := m.Text(); got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}
