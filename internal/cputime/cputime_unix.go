//go:build unix

// Package cputime reads the CPU time the process has used, for
// benchmarks: a cost that another process on the same cores hardly
// changes, unlike wall time.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used (every thread, user and
// system), or 0 where the platform does not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
