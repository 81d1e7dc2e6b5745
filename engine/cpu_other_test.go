//go:build !linux

package engine

import "time"

var start = time.Now()

// threadCPU is wall time where no thread clock is read.
func threadCPU() time.Duration { return time.Since(start) }
