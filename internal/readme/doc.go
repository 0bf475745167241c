// Package readme holds the tests that the Go code in the repository's
// README.md and docs/*.md compiles, vets and runs exactly as written,
// against this module as a user's program would. It has no code of its own.
//
// Every ```go block is built in a module of its own that requires this
// one: a block that begins with a package clause is a whole file (it must
// be gofmt-formatted), any other is a fragment, wrapped as readme_test.go
// says (the body of a function, with the imports of the packages it
// names). TestReadmeGoBlocks checks README.md; TestDocPrograms checks
// docs/*.md, whose docs of issue 29 (events, groups-and-skills,
// interceptors, llm-sdk, mcp, observability, scale-out, ui-protocols) must
// start with a whole package main a person can paste. A doc's programs run
// with a private TMPDIR, must exit 0 within a minute and leave no embedded
// NATS server's folder behind.
//
// # Directives
//
// A directive is an HTML comment, invisible on the rendered page, on the
// line just before a block's fence:
//
//   - <!-- not run: REASON --> on a package main: built and vetted, not
//     run. For a program that needs what a test does not have (an API key,
//     a person at a browser), with the reason for the reader of the doc.
//   - <!-- cut from PATH --> on a fragment: its lines (white space at
//     their ends aside, and runs of it inside counted as one space: gofmt
//     aligns comments by their neighbours) must appear, in a row, in the
//     file PATH (relative to the repository's root, such as an
//     example_test.go that go test runs), and the fragment is not compiled
//     on its own. A
//     fragment without it that appears so in one of the doc's own whole
//     programs needs no directive; any other fragment must compile by the
//     wrapping rule.
//   - <!-- run beside the previous program --> on a package main: the
//     previous program of the doc is a server (terminal 1) that this one
//     (terminal 2) needs. The test starts the server, waits for the first
//     line it prints to standard output (it prints one when it is ready),
//     runs this program, which must exit 0, then interrupts the server as
//     Ctrl-C does: it must exit 0. Both get NATS_URL (the variable the nats
//     CLI reads) set to a free local address, where the server is to listen
//     and the program to connect; a person runs them without it, on the
//     programs' default address. Several programs in a row may run beside
//     the same server, each with a server of its own.
//
// Errors point at the doc's lines: the files carry //line comments.
//
// TestArchitectureDiagram holds the package diagram of docs/architecture.md
// to the imports go list reports: every arrow drawn is an import, in the
// direction drawn, and every import between public packages is drawn.
package readme
