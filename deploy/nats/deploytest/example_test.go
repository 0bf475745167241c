package deploytest_test

import (
	"fmt"
	"log"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

// A nats-server from deploy/nats's toolstream.conf, with keys and
// certificates made for it, and an agent connecting with its own user:
// the files a program of its own would be given are Seed and CA.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "deploy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := deploytest.New("../toolstream.conf", dir)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()

	agent, err := nats.Connect(srv.URL(), srv.Options(deploytest.Agent)...)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	fmt.Println("the agent is connected:", agent.IsConnected())
	fmt.Println("a process of its own gets:", "-nats-nkey", srv.Seed(deploytest.Agent) != "", "-nats-ca", srv.CA() != "")
	// Output:
	// the agent is connected: true
	// a process of its own gets: -nats-nkey true -nats-ca true
}
