package ui_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/aisdk"
)

// doc:begin (docs/ui-protocols.md cuts its example from here to doc:end)

// signedIn is the application's login middleware: it puts the user of
// the request's session cookie in the request's context.
func signedIn(sessions map[string]string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err == nil && sessions[c.Value] != "" {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, sessions[c.Value]))
		}
		next.ServeHTTP(w, r)
	})
}

type userKey struct{}

// threads says who owns each chat (its first user) and who may answer
// any chat's approvals.
type threads struct {
	mu        sync.Mutex
	owner     map[string]string // chat id -> user
	approvers map[string]bool
}

// authorize is the host's hook: asked about everything a request asks of
// a chat, before any of it is done.
func (t *threads) authorize(r *http.Request, a ui.Access) error {
	user, _ := r.Context().Value(userKey{}).(string)
	if user == "" {
		return fmt.Errorf("%w: sign in first", ui.ErrUnauthenticated) // 401
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	owner, known := t.owner[a.Thread]
	switch {
	case !known && a.Action == ui.ActionRun:
		t.owner[a.Thread] = user // a new chat is its starter's
		return nil
	case owner == user:
		return nil // the owner runs, reads and answers
	case a.Action == ui.ActionAnswer && t.approvers[user] && a.Approval != nil && a.Approval.Tool != "delete_file":
		return nil // approvers answer anyone's approvals, but deletions only their owner
	}
	return errors.New("not your chat") // 403
}

// chatRoutes serves useChat to signed-in users; the front end is served
// from this server, or from https://app.example.com.
func chatRoutes(tk *toolkit.Toolkit, model agent.Model, perms *interceptors.Permissions, t *threads) (*ui.Host, http.Handler) {
	host := ui.NewHost(tk, agent.New(model),
		ui.WithPermissions(perms),
		ui.WithAuthorize(t.authorize),
		ui.WithAllowedOrigins("https://app.example.com"),
	)
	chat := aisdk.NewHandler(host)
	mux := http.NewServeMux()
	// No method in the patterns: the handler answers the allowed origin's
	// CORS preflights (OPTIONS) itself.
	mux.Handle("/api/chat", chat)
	mux.Handle("/api/chat/{id}/stream", chat)
	return host, mux
}

// doc:end

// ExampleWithAuthorize serves useChat to signed-in users (a session
// cookie, read by the application's middleware): a chat belongs to the
// user who started it, and approvers may answer its approvals too. Pages
// on other origins than the server's own and https://app.example.com are
// refused.
func ExampleWithAuthorize() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	perms := interceptors.NewPermissions()
	_ = tk.Use(perms.Interceptor())
	model := agent.ModelFunc(func(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
		return &agent.Reply{Text: "Hello.", Finish: agent.FinishStop}, nil
	})
	t := &threads{owner: map[string]string{}, approvers: map[string]bool{"carol": true}}
	host, routes := chatRoutes(tk, model, perms, t)
	defer host.Close()
	srv := httptest.NewServer(signedIn(map[string]string{"s-alice": "alice", "s-bob": "bob"}, routes))
	defer srv.Close()

	send := func(session, origin, method, path, body string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.AddCookie(&http.Cookie{Name: "session", Value: session})
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		// Read to the end, as a browser does: a stream the client left
		// unread is kept, and a resume would get it (200, not 204).
		_, _ = io.Copy(io.Discard, resp.Body)
		fmt.Println(method, path, session, origin, "->", resp.Status)
	}
	const hi = `{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`
	send("", "", "POST", "/api/chat", hi)
	send("s-alice", "", "POST", "/api/chat", hi)
	send("s-bob", "", "GET", "/api/chat/c1/stream", "")
	send("s-alice", "https://evil.example", "POST", "/api/chat", hi)
	send("s-alice", "https://app.example.com", "GET", "/api/chat/c1/stream", "")
	// Output:
	// POST /api/chat   -> 401 Unauthorized
	// POST /api/chat s-alice  -> 200 OK
	// GET /api/chat/c1/stream s-bob  -> 403 Forbidden
	// POST /api/chat s-alice https://evil.example -> 403 Forbidden
	// GET /api/chat/c1/stream s-alice https://app.example.com -> 204 No Content
}
