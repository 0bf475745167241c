//go:build !unix

package natsbus_test

import "time"

// processCPU is not measured here: the CPU ratios come out as NaN.
func processCPU() time.Duration { return 0 }
