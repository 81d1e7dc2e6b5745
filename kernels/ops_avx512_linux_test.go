//go:build linux && amd64 && gc && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
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
		b := GuardedBytes(t, 4*n)
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

// TestGatedAVX512SameBits: the AVX-512 SiLU and GELU products give the
// AVX2 tier's bits for every length (the multiples of 16 in their
// kernels, the rest through the AVX2 ones) and for NaN, infinities,
// signed zeros, subnormals, values around exp's lower limit and GELU's
// thresholds.
func TestGatedAVX512SameBits(t *testing.T) {
	if !supported[tierAVX512] {
		t.Skip("this CPU or build has no AVX-512 F/BW/VL + VNNI: the avx512 tier is not tested here")
	}
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
		float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		87.33654, -87.33654, 87.4, -87.4, 88.8, -88.8, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32,
		1.06066, -1.06066, 6.3639, -6.3639, 13.2, -13.2}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 40, 2048, 6144 + 9} {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(5)-2)))
			y[i] = float32(rng.NormFloat64())
			if rng.IntN(8) == 0 {
				x[i] = special[rng.IntN(len(special))]
			}
		}
		if n >= 16 {
			copy(x, special) // every special value in the kernel's lanes
		}
		for _, f := range []struct {
			name         string
			avx2, avx512 func(x, y []float32)
		}{{"SiLUMul", siluMulAVX2Row, siluMulAVX512Row}, {"GELUErfMul", geluErfMulAVX2Row, geluErfMulAVX512Row}} {
			want := slices.Clone(x)
			f.avx2(want, y)
			got := slices.Clone(x)
			f.avx512(got, y)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, n %d, element %d (x %v): avx512 %v (%#x), avx2 %v (%#x)", f.name, n, i, x[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}
