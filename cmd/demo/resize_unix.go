//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize sends on c when the terminal's size changes (SIGWINCH).
func notifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }

func stopResize(c chan<- os.Signal) { signal.Stop(c) }
