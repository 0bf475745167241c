package anthropicmodel_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/agent/anthropicmodel"
	"github.com/toolstream/toolstream/toolkit"
)

// offline is a transport that counts the requests that reach it and
// fails them: each would have gone to the network.
type offline struct{ n atomic.Int32 }

func (o *offline) RoundTrip(*http.Request) (*http.Response, error) {
	o.n.Add(1)
	return nil, errors.New("dial tcp: lookup api.anthropic.com: no such host")
}

// unsetenv unsets an environment variable for the test.
func unsetenv(t *testing.T, key string) {
	t.Setenv(key, "") // restores it after the test
	os.Unsetenv(key)
}

// countGenerates counts the calls of a model's Generate.
type countGenerates struct {
	agent.Model
	n *int
}

func (c countGenerates) Generate(ctx context.Context, req *agent.Request) (*agent.Reply, error) {
	*c.n++
	return c.Model.Generate(ctx, req)
}

// TestMissingAPIKey: without ANTHROPIC_API_KEY (or another credential) the
// first call fails at once, without a request, saying that the key is
// missing and how to give it, and the loop does not retry it.
func TestMissingAPIKey(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE",
		"ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_ORGANIZATION_ID", "ANTHROPIC_IDENTITY_TOKEN_FILE"} {
		unsetenv(t, k)
	}
	t.Setenv("HOME", t.TempDir()) // no profile in ~/.config
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, stream := range []bool{true, false} {
		net := &offline{}
		model := anthropicmodel.New(anthropic.NewClient(option.WithHTTPClient(&http.Client{Transport: net})), "claude-test", anthropicmodel.WithStreaming(stream))
		generates := 0
		tk := toolkit.New()
		t.Cleanup(func() { _ = tk.Close(context.Background()) })
		sess, err := tk.Session("s")
		if err != nil {
			t.Fatal(err)
		}
		_, err = agent.New(countGenerates{model, &generates}).Run(t.Context(), sess, agent.NewConversation("", "Hi."))
		if err == nil {
			t.Fatal("the run succeeded")
		}
		t.Logf("streaming %v: %v", stream, err)
		for _, want := range []string{"ANTHROPIC_API_KEY", "option.WithAPIKey"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("streaming %v: the error does not say %q: %v", stream, want, err)
			}
		}
		if n := net.n.Load(); n != 0 {
			t.Errorf("streaming %v: %d requests reached the network", stream, n)
		}
		if generates != 1 {
			t.Errorf("streaming %v: the loop asked the model %d times", stream, generates)
		}
	}
}

// TestKeyOrLocalServer: the check stops nothing else. A request with a
// key goes to Anthropic's API; a client pointed at another server (a
// compatible one, a proxy) without a key reaches it.
func TestKeyOrLocalServer(t *testing.T) {
	unsetenv(t, "ANTHROPIC_API_KEY")
	unsetenv(t, "ANTHROPIC_AUTH_TOKEN")
	net := &offline{}
	model := anthropicmodel.New(anthropic.NewClient(option.WithAPIKey("sk-ant-test"), option.WithHTTPClient(&http.Client{Transport: net})), "claude-test")
	if _, err := model.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserText("Hi.")}}); err == nil || net.n.Load() != 1 {
		t.Errorf("with a key: %d requests, %v", net.n.Load(), err)
	}

	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, message("end_turn", obj{"type": "text", "text": "Hi."}))
	})
	local := anthropicmodel.New(anthropic.NewClient(option.WithBaseURL(s.URL)), "local", anthropicmodel.WithStreaming(false))
	reply, err := local.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserText("Hi.")}})
	if err != nil || reply.Text != "Hi." || s.requests() != 1 {
		t.Errorf("a local server without a key: %d requests, %+v, %v", s.requests(), reply, err)
	}
}
