package natsdeploy_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

// A viewer on toolstream.conf reads the events of its session ("demo")
// and may publish nothing: a tool call it sends is refused, and the server
// says so. This example is compiled, not run: deploytest.Start needs a
// test's t (it sets the file's variables with t.Setenv and stops the
// server in t.Cleanup), which an example has not; TestViewerConfined runs
// the same.
func Example() {
	var t *testing.T // in a test: the test's own
	srv := deploytest.Start(t, "toolstream.conf")
	refused := make(chan error, 1)
	nc, err := nats.Connect(srv.URL(), append(srv.Options(deploytest.Viewer),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Its session: allowed.
	sub, err := nc.Subscribe("toolstream.demo.>", func(m *nats.Msg) { fmt.Println("event on", m.Subject) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// A call of a worker's tool: refused.
	_ = nc.Publish("toolstream._tools.count_lines", []byte(`{"text":"a"}`))
	fmt.Println(<-refused)
	// nats: permissions violation: Permissions Violation for Publish to "toolstream._tools.count_lines"
}
