// Package deploytest starts a real nats-server from deploy/nats's
// configuration: a fresh nkey per party, a certificate authority and a
// server certificate made for it, JetStream in a folder of its own. New
// starts one anywhere (a local try of the deployment), Start for a test;
// deploy/nats's tests and the demo's use it.
package deploytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// parties are all of them: New makes an nkey for each.
var parties = []Party{Agent, Worker, Viewer, Approver, Bridge}

// Server is a nats-server started from a configuration file.
type Server struct {
	conf  string
	vars  map[string]string // the file's variables
	port  int
	srv   *server.Server
	seeds map[Party]string
	ca    string
}

// New starts a server with the configuration file conf. It makes in dir
// (which must exist) a new nkey per party, whose seed file Seed names, a
// certificate authority (CA) and the server's certificate and key it
// signs, and a JetStream folder, and gives the file's variables their
// values while it reads the file: the process's environment is as it was
// once New returns. Only the listen address is New's own: loopback and a
// free port. Stop the server with Stop.
func New(conf, dir string) (*Server, error) {
	s := &Server{conf: conf, vars: map[string]string{}, seeds: map[Party]string{}}
	for _, p := range parties {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		s.seeds[p] = filepath.Join(dir, strings.ToLower(string(p))+".nk")
		if err := os.WriteFile(s.seeds[p], seed, 0o600); err != nil {
			return nil, err
		}
		s.vars["TOOLSTREAM_"+string(p)+"_NKEY"] = pub
	}
	ca, err := writeCerts(dir)
	if err != nil {
		return nil, err
	}
	s.ca = ca
	store := filepath.Join(dir, "jetstream")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, err
	}
	s.vars["TOOLSTREAM_TLS_CERT"] = filepath.Join(dir, "server.pem")
	s.vars["TOOLSTREAM_TLS_KEY"] = filepath.Join(dir, "server-key.pem")
	s.vars["TOOLSTREAM_STORE_DIR"] = store
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start is New for a test: the files in a temporary folder of the test's,
// the server stopped at its end, an error fatal.
func Start(t testing.TB, conf string) *Server {
	t.Helper()
	s, err := New(conf, t.TempDir())
	if err != nil {
		t.Fatalf("deploytest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// envMu orders the servers that read their files: each sets the
// process's environment while it does.
var envMu sync.Mutex

// options reads the configuration file with its variables set.
func (s *Server) options() (*server.Options, error) {
	envMu.Lock()
	defer envMu.Unlock()
	for k, v := range s.vars {
		old, had := os.LookupEnv(k)
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
		defer func() {
			if had {
				_ = os.Setenv(k, old)
			} else {
				_ = os.Unsetenv(k)
			}
		}()
	}
	opts, err := server.ProcessConfigFile(s.conf)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", s.conf, err)
	}
	return opts, nil
}

func (s *Server) start() error {
	opts, err := s.options()
	if err != nil {
		return err
	}
	opts.Host, opts.Port = "127.0.0.1", s.port
	if s.port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return errors.New("the server did not start within 10s")
	}
	s.srv = srv
	s.port = srv.Addr().(*net.TCPAddr).Port
	return nil
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
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// URL is the server's address (TLS).
func (s *Server) URL() string { return fmt.Sprintf("tls://127.0.0.1:%d", s.port) }

// Seed is the file of p's nkey seed.
func (s *Server) Seed(p Party) string { return s.seeds[p] }

// CA is the file of the certificate authority that signed the server's
// certificate.
func (s *Server) CA() string { return s.ca }

// Options are what p's program passes to nats.Connect: its seed and the CA.
// A seed that cannot be read fails the connection, saying so.
func (s *Server) Options(p Party) []nats.Option {
	nkey, err := nats.NkeyOptionFromSeed(s.seeds[p])
	if err != nil {
		nkey = func(*nats.Options) error { return fmt.Errorf("deploytest: %s's seed: %w", p, err) }
	}
	return []nats.Option{nkey, nats.RootCAs(s.ca), nats.Name("toolstream-" + strings.ToLower(string(p)))}
}

// writeCerts makes a CA and a certificate for 127.0.0.1 and localhost that
// it signs; it returns the CA's file.
func writeCerts(dir string) (string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolstream test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "toolstream nats"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	for _, f := range []struct {
		name, typ string
		der       []byte
	}{{"ca.pem", "CERTIFICATE", caDER}, {"server.pem", "CERTIFICATE", der}, {"server-key.pem", "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "ca.pem"), nil
}
