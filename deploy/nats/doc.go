// Package natsdeploy holds a NATS server configuration in which every party
// of a toolstream deployment (the agent, tool workers, viewers, approvers,
// an SSE bridge) has a user of its own with only the subjects it needs:
// toolstream.conf, with worker-responses.conf or worker-inbox-prefix.conf
// for the workers. Copy the files; docs/security.md explains them.
//
// The package has no code: its tests start a real nats-server (in the test
// process, from the pinned nats-server module) with exactly these files and
// check what each party can and cannot do.
package natsdeploy
