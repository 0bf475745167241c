// Package remote serves a toolkit's tools from worker processes over NATS and
// calls them from an agent as if they were local.
//
// A [Worker] serves the tools of a toolkit of its own with nats.go's service
// framework (micro): every tool is an endpoint of the service (by default
// "toolstream_tools") on subject <prefix>.<tool> in a queue group, so that
// workers that serve the same tool share its calls and any NATS client finds
// them with $SRV.PING, $SRV.INFO and $SRV.STATS (`nats micro ls`). The tool's
// spec and input schema are in the endpoint's metadata. A worker runs at most
// a bounded number of calls at once and refuses the next one at once with
// the code 503 instead of queueing it.
//
// On the agent's side a [Client] discovers the tools the workers serve
// ([Client.Discover], [Client.Tool], [Client.Resolver]) and makes each a raw
// tool of the agent's toolkit: the agent's interceptors (permissions, limits,
// retry) run around it before anything is sent, and the worker's own
// interceptors run around the tool itself. A call travels with its session,
// call id, agent, remaining time and trace context (traceparent, tracestate)
// in headers; the worker streams the call's progress and deltas back and the
// agent's engine emits them as the call's own, so the call's events go out
// once, on the usual subjects, numbered by one publisher, whatever happens
// to the worker. docs/scale-out.md describes the wire protocol, what is
// guaranteed, and the timings of failures.
//
// Failures are results, as always: no worker for the tool ([ErrNoWorkers])
// fails at once; every worker busy ([ErrBusy]) after a few quick tries;
// a worker that stops sending heartbeats ([ErrWorkerLost]) within
// [ClientOptions.Heartbeat] times [ClientOptions.MissedHeartbeats]. The
// caller's cancellation and deadline reach the worker's handler.
package remote
