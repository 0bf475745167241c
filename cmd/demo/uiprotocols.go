package main

import (
	"net/http"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/agui"
	"github.com/toolstream/toolstream/ui/aisdk"
)

// uiProtocols serves the demo's agent to front ends that speak AG-UI
// (CopilotKit, @ag-ui/client: POST /agui) or the AI SDK's UI message
// stream (useChat: POST /api/chat, and GET /api/chat/{id}/stream to
// resume after a reload, read back from the durable stream). Each
// protocol's threads are sessions of their own (agui-<thread>,
// chat-<id>), which the live page shows like any other; a call that
// needs approval becomes the protocol's interrupt or approval request.
type uiProtocols struct {
	agui, chat *ui.Host
	bus        *natsbus.Bus
}

func newUIProtocols(tk *toolkit.Toolkit, bus *natsbus.Bus, perms *interceptors.Permissions, model agent.Model, maxTurns int) *uiProtocols {
	host := func(prefix string) *ui.Host {
		loop := agent.New(model, agent.WithMaxTurns(maxTurns))
		return ui.NewHost(tk, loop, ui.WithPermissions(perms), ui.WithSystem(systemPrompt), ui.WithSessionPrefix(prefix))
	}
	return &uiProtocols{agui: host("agui-"), chat: host("chat-"), bus: bus}
}

// mount adds the routes. Requests from pages on other origins, and
// bodies not declared as JSON, are refused (pageOnly, and the handlers'
// own origin check): they would run the agent, and answer its approvals,
// for whoever serves that page.
func (u *uiProtocols) mount(mux *http.ServeMux) {
	chat := aisdk.NewHandler(u.chat, aisdk.WithReplay(u.bus))
	mux.Handle("POST /agui", pageOnly(agui.NewHandler(u.agui)))
	mux.Handle("POST /api/chat", pageOnly(chat))
	mux.Handle("GET /api/chat/{id}/stream", pageOnly(chat))
}

// Close ends the threads' runs.
func (u *uiProtocols) Close() {
	u.agui.Close()
	u.chat.Close()
}
