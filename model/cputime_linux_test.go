package model

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (every thread, user and
// system): a benchmark's cost that another process using the same cores
// hardly changes, unlike its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
