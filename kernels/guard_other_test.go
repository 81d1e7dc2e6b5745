//go:build !linux

package kernels_test

import (
	"testing"
	"time"
)

// guarded returns n bytes (without a guard page on this OS).
func guarded(t testing.TB, n int) []byte { return make([]byte, n) }

var start = time.Now()

// threadCPU falls back to wall time on this OS.
func threadCPU() time.Duration { return time.Since(start) }
