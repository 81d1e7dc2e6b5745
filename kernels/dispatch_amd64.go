//go:build amd64 && gc && !purego

package kernels

import (
	"golang.org/x/sys/cpu"
)

// archInit fills in the tables of the amd64 tiers this CPU can run: a tier
// is its matrix kernels (kernelSets) and its vector operations (vecSets).
// The AVX2 tier needs AVX2, FMA and F16C (and an OS that saves the YMM
// state, which cpu checks for AVX/AVX2); the AVX-512 tier adds
// AVX-512F/BW/VL and AVX-512 VNNI (cpu checks the OS saves the ZMM state);
// the AVX-VNNI tier adds the VEX-encoded VNNI on 256 bits to the AVX2
// tier's requirements.
func archInit() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		supported[tierAVX2] = true
		kernelSets[tierAVX2] = avx2Kernels()
		vecSets[tierAVX2] = avx2VecKernels()
		if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI {
			supported[tierAVX512] = true
			kernelSets[tierAVX512] = avx512Kernels()
			vecSets[tierAVX512] = avx512VecKernels(vecSets[tierAVX2])
		}
		if cpu.X86.HasAVXVNNI {
			supported[tierAVXVNNI] = true
			kernelSets[tierAVXVNNI] = avxvnniKernels()
			vecSets[tierAVXVNNI] = vecSets[tierAVX2]
		}
	}
}

// avx2VecKernels is the AVX2 tier's table of vector operations.
func avx2VecKernels() *vecKernels {
	v := genericVecKernels()
	v.silu, v.sigmoid, v.geluErf = siluAVX2Row, sigmoidAVX2Row, geluErfAVX2Row
	v.siluMul, v.geluErfMul, v.add, v.mul = siluMulAVX2Row, geluErfMulAVX2Row, addAVX2Row, mulAVX2Row
	v.sumSquares, v.scaleRow, v.expMax = sumSquaresAVX2, scaleRowAVX2, expMaxAVX2
	v.vecDot, v.vecAxpy, v.dotRows, v.axpyRows = vecDotAVX2, vecAxpyAVX2, dotRowsAVX2, axpyRowsAVX2
	v.f32ToF16, v.dequantQ8, v.quantQ8 = f32ToF16AVX2Row, dequantQ8AVX2Row, quantQ8AVX2Row
	return simdVecKernels(v)
}

// spinPause is the PAUSE instruction: a spin-wait hint that saves power
// and the sibling hyperthread's issue slots.
//
//go:noescape
func spinPause()
