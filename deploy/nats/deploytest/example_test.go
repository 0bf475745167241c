package deploytest_test

import (
	"os/exec"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

// A test starts a nats-server from deploy/nats's toolstream.conf and
// connects as the parties it tests. This example is compiled, not run:
// Start needs a test's t (it sets the file's variables with t.Setenv and
// stops the server in t.Cleanup), which an example has not.
func ExampleStart() {
	var t *testing.T // in a test: the test's own
	srv := deploytest.Start(t, "../toolstream.conf")

	// A party in the test process: its nkey and the test's CA.
	viewer, err := nats.Connect(srv.URL(), srv.Options(deploytest.Viewer)...)
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()

	// A party in a process of its own (here cmd/demo, built by the test)
	// gets the files: its seed and the CA.
	demo := exec.Command("./demo", "-nats", srv.URL(), "-nats-nkey", srv.Seed(deploytest.Agent), "-nats-ca", srv.CA())
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer demo.Process.Kill()

	// The server stops and starts again on its port, with its store: the
	// clients reconnect.
	srv.Restart()
}
