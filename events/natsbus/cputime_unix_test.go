//go:build unix

package natsbus_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far (user and system,
// all threads: the embedded server and the subscribers count too).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
