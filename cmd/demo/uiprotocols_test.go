package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// frames posts body to the demo and returns the stream's data: frames,
// up to the first for which stop (if given) is true.
func frames(t *testing.T, url, body string, stop ...func(string) bool) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	client := &http.Client{Timeout: 90 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
			if len(stop) > 0 && stop[0](d) {
				break
			}
		}
	}
	return out
}

// TestDemoServesUIProtocols: the demo's page listener serves its agent
// over AG-UI (POST /agui) and the AI SDK's UI message stream (POST
// /api/chat): the scripted tour runs in a thread of its own until
// write_note asks, which ends the AG-UI run with an interrupt (answered by
// the next run's resume) and the chat response with an approval request.
func TestDemoServesUIProtocols(t *testing.T) {
	_, addr, _ := startDemoPage(t)
	base := "http://" + addr

	run := frames(t, base+"/agui", `{"threadId":"tour","runId":"r1","messages":[{"id":"u1","role":"user","content":"Give me an overview of this folder."}]}`)
	var last struct {
		Type    string
		Outcome struct {
			Type       string
			Interrupts []struct{ ID, ToolCallID string }
		}
	}
	if len(run) == 0 || !strings.Contains(run[0], `"RUN_STARTED"`) || json.Unmarshal([]byte(run[len(run)-1]), &last) != nil {
		t.Fatalf("AG-UI run: %v", run)
	}
	if last.Type != "RUN_FINISHED" || last.Outcome.Type != "interrupt" || len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("the AG-UI run ends with %s", run[len(run)-1])
	}
	id := last.Outcome.Interrupts[0].ID
	// The resumed run goes on with the tour (a minute of watching the
	// folder at the end): this client leaves once the rejection is in,
	// which stops the run.
	run = frames(t, base+"/agui", `{"threadId":"tour","runId":"r2","messages":[{"id":"u1","role":"user","content":"Give me an overview of this folder."}],"resume":[{"interruptId":"`+id+`","status":"resolved","payload":{"approved":false,"reason":"not today"}}]}`,
		func(f string) bool {
			return strings.Contains(f, `"TOOL_CALL_RESULT"`) && strings.Contains(f, "not today")
		})
	if !strings.Contains(run[len(run)-1], "not today") || !strings.Contains(run[0], `"RUN_STARTED"`) {
		t.Fatalf("the resumed AG-UI run:\n%s", strings.Join(run, "\n"))
	}

	chat := frames(t, base+"/api/chat", `{"id":"tour","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Give me an overview of this folder."}]}]}`)
	all := strings.Join(chat, "\n")
	if chat[len(chat)-1] != "[DONE]" || !strings.Contains(all, `"tool-approval-request"`) || !strings.Contains(all, `"finishReason":"tool-calls"`) {
		t.Fatalf("the chat response:\n%s", all)
	}

	req, _ := http.NewRequest(http.MethodPost, base+"/api/chat", strings.NewReader(`{}`))
	req.Header.Set("Origin", "http://elsewhere.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin chat request: %s", resp.Status)
	}
}
