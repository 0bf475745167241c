package natsdeploy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// A party of the deployment: its user's name in toolstream.conf's variables
// (TOOLSTREAM_<party>_NKEY) and the inbox prefix the file lets it use.
type party string

const (
	agent    party = "AGENT"
	worker   party = "WORKER"
	viewer   party = "VIEWER"
	approver party = "APPROVER"
	bridge   party = "BRIDGE"
)

var parties = []party{agent, worker, viewer, approver, bridge}

// inboxPrefix is each party's nats.CustomInboxPrefix, as toolstream.conf
// allows it to subscribe; "" keeps nats.go's default (_INBOX, the agent's;
// workers, viewers and approvers make no requests).
var inboxPrefix = map[party]string{bridge: "_INBOX_bridge"}

// deployment is a nats-server started from the committed configuration, with
// a fresh nkey per party and a certificate authority made for the test.
type deployment struct {
	t     *testing.T
	conf  string // the configuration file the server loads
	dir   string // seeds and certificates
	port  int
	srv   *server.Server
	seeds map[party]string // seed files
	ca    string
}

// deploy starts a server with toolstream.conf from this folder, or with the
// file conf names (a copy of the folder with the other worker file).
func deploy(t *testing.T, conf string) *deployment {
	t.Helper()
	d := &deployment{t: t, conf: conf, dir: t.TempDir(), seeds: map[party]string{}}
	for _, p := range parties {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		d.seeds[p] = filepath.Join(d.dir, strings.ToLower(string(p))+".nk")
		if err := os.WriteFile(d.seeds[p], seed, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TOOLSTREAM_"+string(p)+"_NKEY", pub)
	}
	d.ca = writeCerts(t, d.dir)
	t.Setenv("TOOLSTREAM_TLS_CERT", filepath.Join(d.dir, "server.pem"))
	t.Setenv("TOOLSTREAM_TLS_KEY", filepath.Join(d.dir, "server-key.pem"))
	t.Setenv("TOOLSTREAM_STORE_DIR", t.TempDir())
	d.start()
	t.Cleanup(d.stop)
	return d
}

// start loads the configuration file and starts the server. Only the listen
// address is the test's own: loopback, a free port the first time and the
// same one on a restart.
func (d *deployment) start() {
	d.t.Helper()
	opts, err := server.ProcessConfigFile(d.conf)
	if err != nil {
		d.t.Fatalf("loading %s: %v", d.conf, err)
	}
	opts.Host, opts.Port = "127.0.0.1", d.port
	if d.port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		d.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		d.t.Fatal("the server did not start within 10s")
	}
	d.srv = srv
	d.port = srv.Addr().(*net.TCPAddr).Port
}

func (d *deployment) stop() {
	if d.srv != nil {
		d.srv.Shutdown()
		d.srv.WaitForShutdown()
		d.srv = nil
	}
}

// restart stops the server and starts it again on the same port with the
// same store: the clients reconnect.
func (d *deployment) restart() {
	d.t.Helper()
	d.stop()
	d.start()
}

func (d *deployment) url() string { return fmt.Sprintf("tls://127.0.0.1:%d", d.port) }

// options are what a party's program passes to nats.Connect (or to
// natsbus.WithNATSOptions): its seed, the CA that signed the server's
// certificate, its inbox prefix.
func (d *deployment) options(p party) []nats.Option {
	d.t.Helper()
	nkey, err := nats.NkeyOptionFromSeed(d.seeds[p])
	if err != nil {
		d.t.Fatal(err)
	}
	opts := []nats.Option{nkey, nats.RootCAs(d.ca), nats.Name("toolstream-" + strings.ToLower(string(p))),
		nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
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
// "Subscription" to subject. Other errors that come first are reported.
func (c *client) refused(t *testing.T, what, subject string) {
	t.Helper()
	want := fmt.Sprintf("for %s to %q", what, subject)
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case err := <-c.errs:
			if strings.Contains(err.Error(), want) {
				return
			}
			t.Errorf("%s: while waiting for the refusal %s: %v", c.who, want, err)
		case <-timeout.C:
			t.Fatalf("%s: the server did not refuse the %s to %q within 10s", c.who, strings.ToLower(what), subject)
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

// writeCerts makes a CA and a certificate for 127.0.0.1 and localhost that
// it signs; it returns the CA's file.
func writeCerts(t *testing.T, dir string) string {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolstream test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "toolstream nats"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", "CERTIFICATE", caDER)
	write("server.pem", "CERTIFICATE", der)
	write("server-key.pem", "EC PRIVATE KEY", keyDER)
	return filepath.Join(dir, "ca.pem")
}

// within is a context for one step of a test.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
