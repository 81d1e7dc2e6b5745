//go:build amd64 && gc && !purego

package kernels

import (
	"golang.org/x/sys/cpu"
)

// archInit enables the AVX2 tier on CPUs with AVX2, FMA and F16C (and an
// OS that saves the YMM state, which cpu checks for AVX/AVX2).
func archInit() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		supported[tierAVX2] = true
		kernelSets[tierAVX2] = avx2Kernels()
	}
}

// spinPause is the PAUSE instruction: a spin-wait hint that saves power
// and the sibling hyperthread's issue slots.
//
//go:noescape
func spinPause()
