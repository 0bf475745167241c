package natsdeploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/deploy/nats/deploytest"
)

type party = deploytest.Party

const (
	agent    = deploytest.Agent
	worker   = deploytest.Worker
	viewer   = deploytest.Viewer
	approver = deploytest.Approver
	bridge   = deploytest.Bridge
)

// inboxPrefix is each party's nats.CustomInboxPrefix, as toolstream.conf
// allows it to subscribe; "" keeps nats.go's default (_INBOX, the agent's;
// workers, viewers and approvers make no requests).
var inboxPrefix = map[party]string{bridge: "_INBOX_bridge"}

// deployment is a nats-server started from a committed configuration file.
type deployment struct {
	*deploytest.Server
	t *testing.T
}

// deploy starts a server with toolstream.conf from this folder, or with the
// file conf names (a copy of the folder with the other worker file).
func deploy(t *testing.T, conf string) *deployment {
	t.Helper()
	return &deployment{Server: deploytest.Start(t, conf), t: t}
}

func (d *deployment) url() string { return d.URL() }

// restart stops the server and starts it again: the clients reconnect.
func (d *deployment) restart() {
	d.t.Helper()
	if err := d.Restart(); err != nil {
		d.t.Fatal(err)
	}
}

// options are what a party's program passes to nats.Connect (or to
// natsbus.WithNATSOptions): its seed, the CA that signed the server's
// certificate, its inbox prefix, quick reconnects.
func (d *deployment) options(p party) []nats.Option {
	d.t.Helper()
	opts := append(d.Options(p), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if prefix := inboxPrefix[p]; prefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}
	return opts
}

// client is a party's connection and the errors the server sent it.
type client struct {
	*nats.Conn
	who  party
	errs chan error
}

// connect connects as p, closed at the end of the test.
func (d *deployment) connect(p party, extra ...nats.Option) *client {
	d.t.Helper()
	c := &client{who: p, errs: make(chan error, 256)}
	opts := append(d.options(p), c.errorHandler())
	nc, err := nats.Connect(d.url(), append(opts, extra...)...)
	if err != nil {
		d.t.Fatalf("connecting as %s: %v", p, err)
	}
	d.t.Cleanup(nc.Close)
	c.Conn = nc
	return c
}

// errorHandler records the asynchronous errors the server sends: the
// permission violations.
func (c *client) errorHandler() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case c.errs <- err:
		default:
		}
	})
}

// refused waits for the server to refuse what c did: a "Publish" or a
// "Subscription" to subject.
func (c *client) refused(t *testing.T, what, subject string) {
	t.Helper()
	waitRefusal(t, c, fmt.Sprintf("for %s to %q", what, subject))
}

// waitRefusal waits for a refusal whose text contains what. Other errors
// that come first are reported.
func waitRefusal(t *testing.T, c *client, what string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case err := <-c.errs:
			if strings.Contains(err.Error(), what) {
				return
			}
			t.Errorf("%s: while waiting for the refusal %s: %v", c.who, what, err)
		case <-timeout.C:
			t.Fatalf("%s: no refusal %s within 10s", c.who, what)
		}
	}
}

// cannotPublish publishes to each subject and waits for each refusal.
func (c *client) cannotPublish(t *testing.T, subjects ...string) {
	t.Helper()
	for _, s := range subjects {
		if err := c.Publish(s, []byte("{}")); err != nil {
			t.Fatalf("%s: publishing to %s: %v", c.who, s, err)
		}
		c.refused(t, "Publish", s)
	}
}

// cannotSubscribe subscribes to each subject and waits for each refusal.
func (c *client) cannotSubscribe(t *testing.T, subjects ...string) {
	t.Helper()
	for _, s := range subjects {
		sub, err := c.SubscribeSync(s)
		if err != nil {
			t.Fatalf("%s: subscribing to %s: %v", c.who, s, err)
		}
		c.refused(t, "Subscription", s)
		_ = sub.Unsubscribe()
	}
}

// clean checks that the server refused nothing c did.
func (c *client) clean(t *testing.T) {
	t.Helper()
	if err := c.Flush(); err != nil {
		t.Fatalf("%s: %v", c.who, err)
	}
	for {
		select {
		case err := <-c.errs:
			t.Errorf("%s: the server refused something: %v", c.who, err)
		default:
			return
		}
	}
}

// within is a context for one step of a test.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
