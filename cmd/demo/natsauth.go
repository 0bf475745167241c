package main

import (
	"flag"
	"os"

	"github.com/nats-io/nats.go"
)

// natsAuth is how the demo's connections to a NATS server given with -nats
// prove who they are and encrypt: a user's credentials (an nkey seed, or a
// credentials file from nsc), TLS. The worker processes (-workers) get a
// user of their own (-worker-nats-nkey, -worker-nats-creds) and the same
// TLS settings; deploy/nats/toolstream.conf is a server configuration that
// gives each its subjects (docs/security.md).
type natsAuth struct {
	nkey, creds             string // this process's user
	ca, cert, key           string // TLS: the server's CA; a client certificate for mutual TLS
	workerNkey, workerCreds string // the worker processes' user
}

func natsAuthFlags(fs *flag.FlagSet, a *natsAuth) {
	fs.StringVar(&a.nkey, "nats-nkey", "", "with -nats: the file of the NATS user's nkey seed (nk -gen user); deploy/nats/toolstream.conf has a user per party")
	fs.StringVar(&a.creds, "nats-creds", "", "with -nats: the NATS user's credentials file (JWT and seed, from nsc)")
	fs.StringVar(&a.ca, "nats-ca", "", "with -nats: the CA certificate (PEM) that signed the NATS server's, for TLS")
	fs.StringVar(&a.cert, "nats-cert", "", "with -nats: a client certificate (PEM) for a server that asks for one (mutual TLS), with -nats-key; the worker processes show it too")
	fs.StringVar(&a.key, "nats-key", "", "with -nats-cert: its private key (PEM)")
	fs.StringVar(&a.workerNkey, "worker-nats-nkey", "", "with -workers and -nats: the worker processes' own nkey seed file (a worker's user may only serve its tools)")
	fs.StringVar(&a.workerCreds, "worker-nats-creds", "", "with -workers and -nats: the worker processes' own credentials file")
}

// check refuses combinations the demo cannot use, each in one line. The
// worker processes (-worker-of) take the same flags for their own user.
func (c *config) checkNATSAuth() error {
	a := c.auth
	given := func(names ...string) string {
		for i, v := range []string{a.nkey, a.creds, a.ca, a.cert, a.key, a.workerNkey, a.workerCreds} {
			if v != "" {
				return names[i]
			}
		}
		return ""
	}
	all := []string{"-nats-nkey", "-nats-creds", "-nats-ca", "-nats-cert", "-nats-key", "-worker-nats-nkey", "-worker-nats-creds"}
	if f := given(all...); f != "" && c.natsURL == "" && c.workerOf == "" {
		return usagef("%s is for a NATS server given with -nats: the embedded server has no users and no TLS (it listens on loopback)", f)
	}
	switch {
	case a.nkey != "" && a.creds != "":
		return usagef("-nats-nkey and -nats-creds both name the user: give one")
	case a.workerNkey != "" && a.workerCreds != "":
		return usagef("-worker-nats-nkey and -worker-nats-creds both name the workers' user: give one")
	case (a.cert == "") != (a.key == ""):
		return usagef("-nats-cert and -nats-key go together: the client certificate and its private key")
	case (a.workerNkey != "" || a.workerCreds != "") && c.workers == 0:
		return usagef("-worker-nats-nkey and -worker-nats-creds are for the worker processes of -workers")
	case c.workers > 0 && (a.nkey != "" || a.creds != "") && a.workerNkey == "" && a.workerCreds == "":
		return usagef("-workers with a NATS user: give the worker processes their own with -worker-nats-nkey or -worker-nats-creds (the agent's user may do far more than serve tools)")
	}
	for i, f := range []string{a.nkey, a.creds, a.ca, a.cert, a.key, a.workerNkey, a.workerCreds} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return usagef("%s: %v", all[i], err)
		}
	}
	return nil
}

// options are this process's options for nats.Connect.
func (a natsAuth) options() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case a.nkey != "":
		o, err := nats.NkeyOptionFromSeed(a.nkey)
		if err != nil {
			return nil, usagef("-nats-nkey %s: %v", a.nkey, err)
		}
		opts = append(opts, o)
	case a.creds != "":
		opts = append(opts, nats.UserCredentials(a.creds))
	}
	if a.ca != "" {
		opts = append(opts, nats.RootCAs(a.ca))
	}
	if a.cert != "" {
		opts = append(opts, nats.ClientCert(a.cert, a.key))
	}
	return opts, nil
}

// workerArgs are the flags that give a worker process its user and the TLS
// settings.
func (a natsAuth) workerArgs() []string {
	var args []string
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	add("-nats-nkey", a.workerNkey)
	add("-nats-creds", a.workerCreds)
	add("-nats-ca", a.ca)
	add("-nats-cert", a.cert)
	add("-nats-key", a.key)
	return args
}

// secured says whether the server asks the demo for a user: the nats CLI
// commands it prints need one too.
func (a natsAuth) secured() bool { return a.nkey != "" || a.creds != "" || a.ca != "" || a.cert != "" }
