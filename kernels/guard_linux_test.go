package kernels_test

import (
	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/kernels"
)

// guarded returns n bytes that end where an inaccessible page begins.
var guarded = kernels.GuardedBytes

// threadCPU is the calling OS thread's CPU time.
var threadCPU = cputime.Thread
