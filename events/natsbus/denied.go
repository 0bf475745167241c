package natsbus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// denied adds the server's refusal to err, a failed JetStream request, when
// the connection's last error is a permissions violation for JetStream's API
// or for the connection's inboxes: a request the NATS user may not make
// (or whose answer it may not hear) goes unanswered, and fails only when its
// time is up, as a timeout that names no cause. ok says it did.
func denied(nc *nats.Conn, err error) (_ error, ok bool) {
	last := nc.LastError()
	if last == nil || !errors.Is(last, nats.ErrPermissionViolation) {
		return err, false
	}
	msg := last.Error()
	inbox := nc.NewInbox()
	inbox = inbox[:strings.LastIndexByte(inbox, '.')+1]
	if !strings.Contains(msg, `"`+jetstream.DefaultAPIPrefix) && !strings.Contains(msg, `"`+inbox) {
		return err, false
	}
	return fmt.Errorf("%w (the NATS server refused this user: %v)", err, last), true
}
