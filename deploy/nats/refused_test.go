package natsdeploy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/toolkit"
)

// TestWorkerRefusedToolSaysSo: a worker asked to serve a tool its NATS user
// may not take (not in worker-responses.conf's list) fails remote.Serve
// with the server's refusal and what to allow. Before, Serve returned no
// error (the refusal comes asynchronously) and the agent's calls failed
// with "no worker serves the tool".
func TestWorkerRefusedToolSaysSo(t *testing.T) {
	d := withState(t)
	c := d.connect(worker)
	tk := toolkit.New()
	t.Cleanup(func() { _ = tk.Close(within(t, 5*time.Second)) })
	if err := tk.Add(toolkit.MustTool(toolkit.Spec{Name: "delete_everything"},
		func(ctx context.Context, _ struct{}) (string, error) { return "done", nil })); err != nil {
		t.Fatal(err)
	}
	w, err := remote.Serve(c.Conn, tk)
	if err == nil {
		_ = w.Stop(within(t, 5*time.Second))
		t.Fatal("Serve returned no error for a tool its user may not take")
	}
	t.Log(err)
	for _, want := range []string{`"toolstream._tools.delete_everything"`, "permissions", "worker-responses.conf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Serve's error does not say %q: %v", want, err)
		}
	}
}
