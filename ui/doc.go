// Package ui serves an agent to the UI protocols' clients (packages
// ui/agui and ui/aisdk hold the handlers): a Host watches a toolkit, and
// each thread is a toolkit session and an agent.Conversation kept between
// requests, with at most one run of the agent loop going on in the
// background. A run that waits for people's approvals ends the response
// (the protocol's interrupt or approval request) and goes on when a later
// request answers.
//
// # Who may call
//
// The handlers refuse a browser request from another origin than the
// server's own (net/http's CrossOriginProtection rule; GET included)
// unless WithAllowedOrigins allows it, and a body not declared as JSON,
// since a page on any site can make a browser post text/plain or a form
// without a preflight. Then they ask the host's WithAuthorize hook about
// everything the request asks of the thread (Access: run, read, answer a
// call) before any of it is done.
//
// docs/ui-protocols.md has the protocols' mapping, how answers to
// approvals are given and the limits.
package ui
