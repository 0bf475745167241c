// Package remote serves a toolkit's tools from worker processes over NATS and
// calls them from an agent as if they were local.
//
// A [Worker] serves the tools of a toolkit of its own with nats.go's service
// framework (micro): every tool is an endpoint of the service (by default
// "toolstream_tools") on subject <prefix>.<tool> in a queue group, so that
// workers that serve the same tool share its calls and any NATS client finds
// them with $SRV.PING, $SRV.INFO and $SRV.STATS (`nats micro ls`). The tool's
// spec and input schema are in the endpoint's metadata. A worker runs at most
// [WithMaxInFlight] calls at once; the next ones wait in its queue, in the order
// they came, bounded by their deadlines: a spike waits instead of failing.
//
// On the agent's side a [Client] discovers the tools the workers serve
// ([Client.Discover], [Client.Tool], [Client.Resolver]) and makes each a raw
// tool of the agent's toolkit: the agent's interceptors (permissions, limits,
// retry) run around it before anything is sent, and the worker's own
// interceptors run around the tool itself. A call travels with its session,
// call id, agent, remaining time and trace context in headers, to an inbox
// of its own that nobody can guess; the worker sends the call's result, and
// its progress and deltas when the tool streams, and the agent's engine
// emits them as the call's own, so the call's events go out once, on the
// usual subjects, numbered by one publisher, whatever happens to the worker.
// The first worker that answers a call binds it: nothing else can speak for
// it. docs/scale-out.md describes the wire protocol (version 2), what is
// guaranteed, and the timings of failures; docs/security.md what each party
// on the bus can do.
//
// Failures are results, as always: no worker for the tool ([ErrNoWorkers])
// fails at once; every worker's queue full ([ErrBusy]) at the call's
// deadline; a worker that stops sending heartbeats (*[LostError]) within
// the heartbeat interval times the heartbeats missed ([WithHeartbeat]). The
// caller's cancellation and deadline reach the worker's handler.
package remote
