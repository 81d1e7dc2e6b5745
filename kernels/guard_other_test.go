//go:build !linux

package kernels_test

import (
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
)

// guarded returns n bytes (without a guard page on this OS).
func guarded(t testing.TB, n int) []byte { return make([]byte, n) }

// threadCPU falls back to wall time on this OS.
var threadCPU = cputime.Thread
