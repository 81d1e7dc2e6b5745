//go:build linux && amd64 && gc && !purego

package kernels

import (
	"testing"
	"unsafe"
)

// TestExpMaxAVX512Guarded: an odd eight elements last are read and
// written in the low half of a register only, so a row that ends at an
// unmapped page is safe, and its sum keeps the AVX2 tier's bits.
func TestExpMaxAVX512Guarded(t *testing.T) {
	if !supported[tierAVX512] {
		t.Skip("this CPU or build has no AVX-512 F/BW/VL + VNNI: the avx512 tier is not tested here")
	}
	for _, n := range []int{8, 24, 40} {
		b := guardedBytes(t, 4*n)
		g := unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
		for i := range g {
			g[i] = float32(i) / 3
		}
		want := append([]float32(nil), g...)
		mw, sw := expMaxAVX2(want)
		if m, s := expMaxAVX512(g); m != mw || s != sw {
			t.Fatalf("n %d: max %v sum %v, avx2 %v %v", n, m, s, mw, sw)
		}
	}
}
