//go:build amd64 && gc && !purego

package kernels

import "golang.org/x/sys/cpu"

var vecAVX2CPU = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useVecAVX2 follows the tier in use, so pinning the generic tier
// (SISKIN_KERNELS=generic, or tests) turns these off too.
func useVecAVX2() bool { return vecAVX2CPU && tier(current.Load()) >= tierAVX2 }

//go:noescape
func vecDotAVX2(a, b []float32) float32

//go:noescape
func vecAxpyAVX2(y, x []float32, s float32)

func vecDot(a, b []float32) float32 {
	if useVecAVX2() {
		return vecDotAVX2(a, b)
	}
	return vecDotGo(a, b)
}

func vecAxpy(y, x []float32, s float32) {
	if useVecAVX2() {
		vecAxpyAVX2(y, x, s)
		return
	}
	vecAxpyGo(y, x, s)
}
