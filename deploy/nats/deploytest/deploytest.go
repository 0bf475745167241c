// Package deploytest starts a real nats-server from deploy/nats's
// configuration for tests: a fresh nkey per party, a certificate authority
// and a server certificate made for the test, JetStream in a temporary
// folder. deploy/nats's tests and the demo's use it.
package deploytest

import (
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

// Party names a user of toolstream.conf: its public nkey goes in the
// variable TOOLSTREAM_<party>_NKEY.
type Party string

// The parties of toolstream.conf.
const (
	Agent    Party = "AGENT"
	Worker   Party = "WORKER"
	Viewer   Party = "VIEWER"
	Approver Party = "APPROVER"
	Bridge   Party = "BRIDGE"
)

// Parties are all of them.
var Parties = []Party{Agent, Worker, Viewer, Approver, Bridge}

// Server is a nats-server started from a configuration file.
type Server struct {
	t     testing.TB
	conf  string
	port  int
	srv   *server.Server
	seeds map[Party]string
	ca    string
}

// Start starts a server with the configuration file conf, stopped at the
// end of the test. It sets the file's variables in the environment
// (t.Setenv): a new nkey per party, whose seed file Seed names, the server's
// certificate and key, signed by the CA in the file CA, and a JetStream
// folder. Only the listen address is the test's own: loopback and a free
// port.
func Start(t testing.TB, conf string) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{t: t, conf: conf, seeds: map[Party]string{}}
	for _, p := range Parties {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		s.seeds[p] = filepath.Join(dir, strings.ToLower(string(p))+".nk")
		if err := os.WriteFile(s.seeds[p], seed, 0o600); err != nil {
			t.Fatal(err)
		}
		setenv(t, "TOOLSTREAM_"+string(p)+"_NKEY", pub)
	}
	s.ca = writeCerts(t, dir)
	setenv(t, "TOOLSTREAM_TLS_CERT", filepath.Join(dir, "server.pem"))
	setenv(t, "TOOLSTREAM_TLS_KEY", filepath.Join(dir, "server-key.pem"))
	setenv(t, "TOOLSTREAM_STORE_DIR", t.TempDir())
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// setenv is t.Setenv for a testing.TB.
func setenv(t testing.TB, key, value string) {
	t.Helper()
	if st, ok := t.(interface{ Setenv(string, string) }); ok {
		st.Setenv(key, value)
		return
	}
	t.Fatalf("deploytest: %T cannot set %s", t, key)
}

func (s *Server) start() {
	s.t.Helper()
	opts, err := server.ProcessConfigFile(s.conf)
	if err != nil {
		s.t.Fatalf("loading %s: %v", s.conf, err)
	}
	opts.Host, opts.Port = "127.0.0.1", s.port
	if s.port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("the server did not start within 10s")
	}
	s.srv = srv
	s.port = srv.Addr().(*net.TCPAddr).Port
}

// Stop shuts the server down.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart stops the server and starts it again on the same port with the
// same store: its clients reconnect.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// URL is the server's address (TLS).
func (s *Server) URL() string { return fmt.Sprintf("tls://127.0.0.1:%d", s.port) }

// Seed is the file of p's nkey seed.
func (s *Server) Seed(p Party) string { return s.seeds[p] }

// CA is the file of the certificate authority that signed the server's
// certificate.
func (s *Server) CA() string { return s.ca }

// Options are what p's program passes to nats.Connect: its seed and the CA.
func (s *Server) Options(p Party) []nats.Option {
	s.t.Helper()
	nkey, err := nats.NkeyOptionFromSeed(s.seeds[p])
	if err != nil {
		s.t.Fatal(err)
	}
	return []nats.Option{nkey, nats.RootCAs(s.ca), nats.Name("toolstream-" + strings.ToLower(string(p)))}
}

// writeCerts makes a CA and a certificate for 127.0.0.1 and localhost that
// it signs; it returns the CA's file.
func writeCerts(t testing.TB, dir string) string {
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
