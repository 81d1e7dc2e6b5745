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

//go:noescape
func dotRowsAVX2(out, q, k []float32, stride int, scale float32)

//go:noescape
func axpyRowsAVX2(y, p, v []float32, stride int)

func dotRows(out, q, k []float32, stride int, scale float32) {
	if useVecAVX2() {
		dotRowsAVX2(out, q, k, stride, scale)
		return
	}
	dotRowsGo(out, q, k, stride, scale)
}

func axpyRows(y, p, v []float32, stride int) {
	if useVecAVX2() {
		axpyRowsAVX2(y, p, v, stride)
		return
	}
	axpyRowsGo(y, p, v, stride)
}
