// Package readme holds the test that the Go code in the repository's
// README.md compiles, vets and runs exactly as written, against this module
// as a user's program would. It has no code of its own.
package readme
