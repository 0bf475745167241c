package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolstream/toolstream/internal/testutil"
)

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a buffer the demo's goroutines write to while a test
// reads it.
type syncBuffer = testutil.SyncBuffer

// demoRun is the demo running in the test's process, its page on a free
// port and no NATS listener for outside clients.
type demoRun struct {
	t              *testing.T
	addr           string
	stdout, stderr syncBuffer
	cancel         context.CancelFunc
	exited         chan error // run's result, put back by whoever reads it
	stopOnce       sync.Once
}

// startDemo runs the demo with args (after --listen and --nats-listen) until
// Stop, which the test's cleanup calls too.
func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	d := &demoRun{t: t, addr: freeAddr(t), exited: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	args = append([]string{"--listen", d.addr, "--nats-listen", ""}, args...)
	go func() { d.exited <- run(ctx, args, &d.stdout, &d.stderr) }()
	t.Cleanup(d.Stop)
	return d
}

// URL is the page's base URL.
func (d *demoRun) URL() string { return "http://" + d.addr }

// Failed is non-empty once the demo has returned (early, while the test
// still needs it): what it returned and printed.
func (d *demoRun) Failed() string {
	select {
	case err := <-d.exited:
		d.exited <- err
		return fmt.Sprintf("the demo returned early: %v\nstdout:\n%s\nstderr:\n%s", err, d.stdout.String(), d.stderr.String())
	default:
		return ""
	}
}

// Stop ends the demo's context and waits for it to return, failing the
// test if it does not within 30 s or returns an error other than the
// cancellation. Calls after the first do nothing.
func (d *demoRun) Stop() {
	d.stopOnce.Do(func() {
		d.cancel()
		select {
		case err := <-d.exited:
			d.exited <- err
			if err != nil && !errors.Is(err, context.Canceled) {
				d.t.Errorf("the demo failed: %v\nstderr:\n%s", err, d.stderr.String())
			}
		case <-time.After(30 * time.Second):
			d.t.Errorf("the demo did not return within 30s of its context's end")
		}
	})
}

// postApprove posts body to the page's approve endpoint, as the page does,
// and returns the status and the answer.
func postApprove(app *webApp, body string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/api/approve", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	app.approve(rec, req)
	return rec.Code, rec.Body.String()
}
