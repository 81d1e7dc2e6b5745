//go:build arm64 && gc && !purego

package kernels

import (
	"golang.org/x/sys/cpu"
)

// archInit enables the NEON tier (Advanced SIMD is part of every arm64
// CPU Go runs on) and, on CPUs with the dot-product extension (SDOT,
// FEAT_DotProd: Cortex-A55/A76 and later, Apple M1, Neoverse), the dotprod
// tier, and with the int8 matrix multiply too (SMMLA, FEAT_I8MM: Neoverse
// V1/N2, Cortex-A710/X2, Apple M2), the i8mm tier (opt-in, see optIn).
func archInit() {
	supported[tierNEON] = true
	kernelSets[tierNEON] = neonKernels(false, false)
	vecSets[tierNEON] = neonVecKernels()
	if cpu.ARM64.HasASIMDDP {
		supported[tierDotprod] = true
		kernelSets[tierDotprod] = neonKernels(true, false)
		vecSets[tierDotprod] = vecSets[tierNEON]
		if cpu.ARM64.HasI8MM {
			supported[tierI8MM] = true
			kernelSets[tierI8MM] = neonKernels(true, true)
			vecSets[tierI8MM] = vecSets[tierNEON]
		}
	}
}

// neonVecKernels is the NEON tiers' table of vector operations: the
// attention kernels in NEON, the activations in Go (f32ToF16 too: it runs
// once per cached key/value, not per read).
func neonVecKernels() *vecKernels {
	v := genericVecKernels()
	v.vecDot, v.vecAxpy, v.dotRows, v.axpyRows = vecDotNEON, vecAxpyNEON, dotRowsNEON, axpyRowsNEON
	return simdVecKernels(v)
}

// spinPause is the YIELD instruction: a spin-wait hint.
//
//go:noescape
func spinPause()

// encSamples is never called: its body holds one instance of each
// byte-encoded instruction (see neon_arm64.h), which the tests compare
// with a disassembler's encodings; encSampleWord returns its i-th
// instruction word.
func encSamples()

func encSampleWord(i int) uint32
