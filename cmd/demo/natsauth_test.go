package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

// TestDemoNATSAuthFlags: the user and TLS flags need -nats, one user each,
// a certificate with its key, files that exist, and a user of their own for
// the worker processes.
func TestDemoNATSAuthFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed.nk")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "tls://127.0.0.1:4222"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nats-nkey", file}, "-nats-nkey is for a NATS server given with -nats"},
		{[]string{"-nats-ca", file}, "-nats-ca is for a NATS server given with -nats"},
		{[]string{"-nats", url, "-nats-nkey", file, "-nats-creds", file}, "give one"},
		{[]string{"-nats", url, "-nats-cert", file}, "-nats-cert and -nats-key go together"},
		{[]string{"-nats", url, "-nats-nkey", "/no/such/seed"}, "-nats-nkey: stat /no/such/seed"},
		{[]string{"-nats", url, "-worker-nats-nkey", file}, "are for the worker processes of -workers"},
		{[]string{"-nats", url, "-nats-nkey", file, "-workers", "1"}, "give the worker processes their own"},
		{[]string{"-nats", url, "-workers", "1", "-worker-nats-nkey", file, "-worker-nats-creds", file}, "give one"},
	} {
		_, err := parseFlags(tc.args, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error about %q", tc.args, err, tc.want)
		}
	}
	for _, args := range [][]string{
		{"-nats", url, "-nats-nkey", file, "-nats-ca", file},
		{"-nats", url, "-nats-creds", file, "-nats-cert", file, "-nats-key", file},
		{"-nats", url, "-nats-nkey", file, "-workers", "2", "-worker-nats-nkey", file},
		{"-nats", url, "-nats-ca", file, "-workers", "2"},
		{"-worker-of", url, "-nats-nkey", file, "-nats-ca", file},
	} {
		if _, err := parseFlags(args, nil, io.Discard); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestDemoLeastPrivilege runs the demo binary against a nats-server started
// with deploy/nats/toolstream.conf, over TLS: the agent on the agent's
// user, its two worker processes on the worker's (which may only serve
// their tools), while a viewer on the viewer's user follows the session.
// The tour ends as it does on an open server, the workers ran the folder
// tools, and the server refused nobody anything.
func TestDemoLeastPrivilege(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo binary")
	}
	bin, err := buildDemo()
	if err != nil {
		t.Fatal(err)
	}
	srv := deploytest.Start(t, "../../deploy/nats/toolstream.conf")

	refused := make(chan error, 16)
	vc, err := nats.Connect(srv.URL(), append(srv.Options(deploytest.Viewer), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vc.Close)
	col := &collector{news: make(chan struct{}, 1)}
	if _, err := vc.Subscribe("toolstream.demo.>", col.handle); err != nil {
		t.Fatal(err)
	}
	if err := vc.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-nats", srv.URL(), "-nats-nkey", srv.Seed(deploytest.Agent), "-nats-ca", srv.CA(),
		"-workers", "2", "-worker-nats-nkey", srv.Seed(deploytest.Worker),
		"-session", "demo", "-dir", "../..", "-speed", "0", "-listen", freeAddr(t), "-once", "-plain", "-v")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the demo: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"tool workers: ", "=== Summary: 6 turns, 13 calls", "states: 1 interrupted, 10 success, 2 error",
		"the server asks for a user"} {
		if !strings.Contains(stdout.String(), want) {
			t.Fatalf("output lacks %q:\n%s\n%s", want, stdout.String(), stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "Permissions Violation") {
		t.Errorf("the server refused the agent or a worker something:\n%s", stderr.String())
	}
	workers := regexp.MustCompile(`(\w{22}) \(pid \d+\)`).FindAllStringSubmatch(stdout.String(), -1)
	if len(workers) != 2 {
		t.Fatalf("workers named: %v", workers)
	}
	ranThere := 0
	for _, ev := range col.snapshot() {
		if ev.Result != nil && ev.Result.Meta["worker"] != nil {
			ranThere++
		}
	}
	if ranThere < 4 {
		t.Errorf("the viewer saw %d results of calls that ran on a worker, want at least 4", ranThere)
	}
	select {
	case err := <-refused:
		t.Errorf("the viewer: %v", err)
	default:
	}
}
