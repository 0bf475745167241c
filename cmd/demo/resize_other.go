//go:build !unix

package main

import "os"

// notifyResize does nothing where there is no SIGWINCH: the size read at
// the start stays.
func notifyResize(chan<- os.Signal) {}

func stopResize(chan<- os.Signal) {}
