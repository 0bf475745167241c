// Package thread keeps the threads that UI protocol handlers (packages
// ui/agui and ui/aisdk) serve: a Host watches a toolkit, and each Thread
// is a toolkit session and an agent.Conversation kept between requests,
// with at most one run of the agent loop going on in the background. A
// run is cut into responses, one per HTTP response: a response ends when
// the run is over or paused (calls wait for people's approvals and
// nothing else runs), at ui_mark events, by the events alone, so that a
// replay from the durable stream cuts them the same way (Replayer).
//
// # Answers to approvals
//
// A request's answers (Input.Answers) are given all or nothing, as far
// as interceptors.Permissions allows: it decides one call at a time. Every
// answer is checked first, against the thread's pause and against
// Permissions.Pending, and none is given when one fails. Requests that
// answer one thread take turns. A call can still stop waiting between the
// check and its own answer (its approval expires just then): the other
// answers are given all the same, and Begin returns the response with an
// *AnswersError that says which took effect and which did not; the
// handlers send its AnswersReport at the start of the response, and the
// expired call shows its own outcome in it. Before giving answers the
// thread sends a ui_answers event (AnswersEvent), so that a response does
// not end paused on a call whose decision is on its way.
//
// # Who may call
//
// Handlers call Host.Admit first: a browser request from another origin
// than the server's own (net/http's CrossOriginProtection rule; GET
// included) is refused unless WithAllowedOrigins allows it, and a body
// not declared as JSON is refused, since a page on any site can make a
// browser post text/plain or a form without a preflight. Then Host.Open
// asks the host's WithAuthorize hook about everything the request asks
// of the thread (Access: run, read, answer a call) before any of it is
// done.
//
// docs/ui-protocols.md has the protocols' mapping and the limits.
package thread
