// Package wire holds the names the library's NATS protocols use on the
// wire: the headers, metadata keys and control subjects of remote tool
// calls (docs/scale-out.md describes the protocol) and the trace headers
// that the event publisher and remote calls send. Users never write them:
// they live here, shared by the packages and tests that speak the
// protocols, instead of in the public API.
package wire

import (
	"crypto/sha256"
	"encoding/hex"
)

// The trace context headers (W3C), on events and on remote calls, passed
// on untouched.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// The names of remote tool calls' service and subjects, the workers' and
// clients' defaults.
const (
	// DefaultService is the micro service name workers register under.
	DefaultService = "toolstream_tools"
	// DefaultPrefix is the subject prefix of the tools' endpoints:
	// <prefix>.<tool>. Under the events' prefix, but with a token no
	// session id is ever encoded to (plain tokens never start with "_"), so
	// that a subscription to one session's events (toolstream.<session>.>)
	// never receives a call, and an event subject has four tokens where a
	// call's has three.
	DefaultPrefix = "toolstream._tools"
	// DefaultQueueGroup is the queue group the workers of a tool share.
	DefaultQueueGroup = "toolstream"
)

// Request headers of a remote call (agent to worker).
const (
	HeaderSession   = "Toolstream-Session"
	HeaderCall      = "Toolstream-Call"
	HeaderAgent     = "Toolstream-Agent"
	HeaderTimeout   = "Toolstream-Timeout-Ms"   // time left to the call's deadline
	HeaderHeartbeat = "Toolstream-Heartbeat-Ms" // how often the caller wants to hear
	// NATS trims header values: a session or call id that starts or ends
	// with a space also goes quoted (strconv.Quote) in these, which a
	// worker reads first.
	HeaderSessionQuoted = "Toolstream-Session-Quoted"
	HeaderCallQuoted    = "Toolstream-Call-Quoted"
)

// Reply headers of a remote call (worker to agent, on the request's reply
// subject).
const (
	HeaderFrame = "Toolstream-Frame" // accept, hb, progress, delta, result, cancel
	HeaderSeq   = "Toolstream-Seq"   // 1, 2, ... per call: a gap means a lost frame
	// HeaderWorker names the worker on every frame and refusal. The first
	// worker that speaks binds the call: a frame that names another worker,
	// or none, is dropped (remote.ClientStats.Dropped).
	HeaderWorker = "Toolstream-Worker"
	HeaderReset  = "Toolstream-Reset" // on a delta that starts the content over
	// HeaderChunk, "<index>/<count>" on a delta frame, marks one piece of a
	// part too large for one message: the bodies of pieces 0 to count-1, in
	// a row, put together, are the part's JSON (as in the events' chunks,
	// docs/events.md, "Large content").
	HeaderChunk = "Toolstream-Chunk"
)

// Control message kinds: the last token of a control subject.
const (
	// ControlCancel: stop the calls named (one key per line in the body).
	// The worker that holds one answers on its inbox with a cancel frame,
	// then its result; a call that ended meanwhile gets its result again.
	ControlCancel = "cancel"
	// ControlResync: this client reconnected and may have missed frames of
	// the calls named. The worker that holds one sends a heartbeat on its
	// inbox, or its result again if it ended in the last remote.WithKeepResults.
	ControlResync = "resync"
)

// Endpoint metadata keys of a worker's tools.
const (
	MetaSpec         = "toolstream.spec"
	MetaSchema       = "toolstream.schema"
	MetaOutputSchema = "toolstream.output_schema"
	MetaProtocol     = "toolstream.protocol"
)

// ControlSubject is where a client of the prefix and service sends its
// control messages of a kind: <prefix>._control.<service>.<kind>. Every
// worker of the service receives them, and only the worker that holds a
// call one names acts (with a Toolstream-Worker header, only that worker).
// Under the default prefix it has five tokens, where a call's subject has
// three and an event's four: no tool's subject is ever one, and no stream
// or subscription over the events (toolstream.*.*.*) takes it.
func ControlSubject(prefix, service, kind string) string {
	return prefix + "._control." + service + "." + kind
}

// CallKey names a call in control messages: the hex of the first 16 bytes
// of the SHA-256 of its inbox. Every worker of the service receives a
// control message; a key tells them which call without telling them its
// inbox, which only the worker that took the call knows.
func CallKey(inbox string) string {
	sum := sha256.Sum256([]byte(inbox))
	return hex.EncodeToString(sum[:16])
}
