package remote_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/internal/wire"
)

// TestNATSCLIListsWorkers: the real nats CLI finds the workers (`nats micro
// ls`), their tools with spec and schema (`nats micro info`) and their
// counters (`nats micro stats`), and calls a tool with nothing but
// `nats request` and the headers docs/scale-out.md names.
func TestNATSCLIListsWorkers(t *testing.T) {
	cli := natstest.CLI(t)
	bus := natstest.Bus(t, natsbus.WithListen("127.0.0.1:0"))
	w1 := serve(t, bus, workerKit(t, nil))
	w2 := serve(t, bus, workerKit(t, nil))
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append(args, "--server", bus.ClientURL())...).CombinedOutput()
		if err != nil {
			t.Fatalf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ls := run("micro", "ls", "--json")
	var infos []struct {
		Name string `json:"name"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal([]byte(ls), &infos); err != nil {
		t.Fatalf("micro ls --json: %v\n%s", err, ls)
	}
	ids := map[string]bool{}
	for _, in := range infos {
		if in.Name == wire.DefaultService {
			ids[in.ID] = true
		}
	}
	if !ids[w1.ID()] || !ids[w2.ID()] || len(ids) != 2 {
		t.Fatalf("micro ls lists %v, want %s and %s", ids, w1.ID(), w2.ID())
	}
	info := run("micro", "info", wire.DefaultService, w1.ID(), "--json")
	for _, want := range []string{`"count"`, `toolstream._tools.count`, wire.MetaSpec, wire.MetaSchema, `counts words`} {
		if !strings.Contains(info, want) {
			t.Errorf("micro info lacks %s:\n%s", want, info)
		}
	}
	if stats := run("micro", "stats", wire.DefaultService, "--json"); !strings.Contains(stats, `max_in_flight`) {
		t.Errorf("micro stats lacks the worker's counters:\n%s", stats)
	}
	// A call from the CLI: the frames come back, the last is the result.
	out := run("request", "toolstream._tools.count", `{"words":["a","b"]}`,
		"-H", wire.HeaderSession+":cli", "-H", wire.HeaderCall+":c1", "--replies", "0", "--timeout", "2s", "--raw")
	if !strings.Contains(out, `"state":"success"`) || !strings.Contains(out, `{\"n\":2}`) && !strings.Contains(out, `"json":{"n":2}`) {
		t.Fatalf("nats request: %s", out)
	}
}
