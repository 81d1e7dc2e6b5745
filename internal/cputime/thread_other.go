//go:build !linux

package cputime

import "time"

var start = time.Now()

// Thread falls back to wall time where no thread clock is read.
func Thread() time.Duration { return time.Since(start) }
