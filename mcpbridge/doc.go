// Package mcpbridge connects a toolstream Toolkit to the Model Context
// Protocol, both ways, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp):
//
//   - as a client, it registers the tools of MCP servers (over stdio or
//     streamable HTTP) as toolstream tools, so a model calls them like any
//     other, with the toolkit's validation, interceptors and events;
//   - as a server, it serves a Toolkit's tools to MCP clients (over stdio or
//     as an http.Handler), one toolstream session per MCP session.
//
// The engine (package toolkit) does not import the SDK: only programs that
// import this package link it. See docs/mcp.md for the naming rule and the
// mapping of content, progress, cancellation, annotations, groups and
// approvals.
package mcpbridge
