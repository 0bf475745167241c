package natsdeploy_test

import (
	"fmt"
	"log"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

// A viewer on toolstream.conf reads the events of its session ("demo") and
// may publish nothing: a tool call it sends is refused, and the server
// says so (TestViewerConfined holds the rest of what it may not do).
func Example() {
	dir, err := os.MkdirTemp("", "deploy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := deploytest.New("toolstream.conf", dir)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()

	refused := make(chan error, 1)
	nc, err := nats.Connect(srv.URL(), append(srv.Options(deploytest.Viewer),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))...)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync("toolstream.demo.>"); err != nil { // its session: allowed
		log.Fatal(err)
	}
	_ = nc.Publish("toolstream._tools.count_lines", []byte(`{"text":"a"}`)) // a worker's tool: refused
	fmt.Println(<-refused)
	// Output:
	// nats: permissions violation: Permissions Violation for Publish to "toolstream._tools.count_lines"
}
