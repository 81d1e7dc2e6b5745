//go:build arm64 && gc && !purego

package kernels_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestNEONExtremes: the neon tier forms int8 products in int16 lanes
// (SMULL/SMLAL) before widening them, which overflows if a lane adds too
// many of them; weights of extreme quants (every byte 0x00, 0xff, 0x80,
// 0x7f or 0x88: Q8_0 -128 and 127, Q4_0 -8 and 7, Q4_K/Q5_K quants 15/31
// with scales and mins 63, Q6_K -32 with scales -128) against activations that
// quantize to +-127 (same sign, or alternating) must still match the
// reference in every tier.
func TestNEONExtremes(t *testing.T) {
	for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		colsList := []int{128, 160}
		if typ.BlockSize() == tensor.QK_K {
			colsList = []int{256, 512}
		}
		for _, cols := range colsList {
			stride, _ := tensor.RowBytes(typ, cols)
			const rows = 3
			for _, fill := range []byte{0x00, 0xff, 0x80, 0x7f, 0x88} {
				w := make([]byte, rows*stride)
				for i := range w {
					w[i] = fill
				}
				bb := typ.BlockBytes()
				for off := 0; off < len(w); off += bb {
					scaleFields(typ, w[off:off+bb], 0.5, 0.25)
				}
				var xs [4][]float32
				for i := range xs {
					xs[i] = make([]float32, cols)
					for j := range xs[i] {
						switch i {
						case 0:
							xs[i][j] = 1
						case 1:
							xs[i][j] = -1
						case 2:
							xs[i][j] = float32(1 - 2*(j%2))
						default:
							xs[i][j] = float32(1 - 2*(j/16%2))
						}
					}
				}
				for _, tierName := range kernels.Tiers() {
					t.Run(fmt.Sprintf("%s/%s/%d/%#x", tierName, typ, cols, fill), func(t *testing.T) {
						checkKernel(t, tierName, typ, rows, cols, w, xs)
					})
				}
			}
		}
	}
}

// TestNEONDotprodSame: the arm64 tiers differ only in how a block's
// exact integer sum is formed, so dotprod and i8mm (where the CPU has
// them) must agree with neon bit for bit, on odd and even row counts
// (i8mm pairs rows) and batches through the 4-row kernels and the rest.
func TestNEONDotprodSame(t *testing.T) {
	tiers := armTiers()
	if len(tiers) < 2 {
		t.Skip("no dotprod tier on this CPU")
	}
	rng := newRNG(30)
	for _, typ := range allTypes {
		cols := 1280
		if typ.BlockSize() == 1 {
			cols = 1001
		}
		for _, rows := range []int{37, 10} {
			w := randomMatrix(rng, typ, rows, cols)
			const n = 6
			x := randomVec(rng, n*cols)
			outs := make([][]float32, len(tiers))
			for i, name := range tiers {
				restore := kernels.UseTier(name)
				outs[i] = make([]float32, n*w.Rows)
				kernels.MatMul(outs[i], w, x, n)
				restore()
				if j := sameBits(outs[0], outs[i]); j >= 0 {
					t.Errorf("%s %d rows: neon %v, %s %v at %d", typ, rows, outs[0][j], name, outs[i][j], j)
				}
			}
		}
	}
}

// TestNEONTiersMatchCPU: dotprod and i8mm are on exactly when the CPU
// has them (run under qemu -cpu cortex-a53, cortex-a76 and max by CI),
// and i8mm is never picked unless pinned.
func TestNEONTiersMatchCPU(t *testing.T) {
	have := kernels.Tiers()
	dp, mm := cpu.ARM64.HasASIMDDP, cpu.ARM64.HasASIMDDP && cpu.ARM64.HasI8MM
	if slices.Contains(have, "dotprod") != dp || slices.Contains(have, "i8mm") != mm {
		t.Errorf("tiers %v; CPU dotprod %v, i8mm %v", have, dp, cpu.ARM64.HasI8MM)
	}
	if kernels.Tier() == "i8mm" && os.Getenv(kernels.EnvKernels) != "i8mm" {
		t.Errorf("i8mm picked at start-up without %s", kernels.EnvKernels)
	}
	t.Logf("tiers %v", have)
}

// armTiers lists the arm64 SIMD tiers this CPU runs, neon first.
func armTiers() []string {
	var ts []string
	for _, name := range []string{"neon", "dotprod", "i8mm"} {
		if slices.Contains(kernels.Tiers(), name) {
			ts = append(ts, name)
		}
	}
	return ts
}

// TestNEONPackedWeightPath: prepared W4A8/W8A8 run the Q4_0/Q8_0 kernels
// on repacked rows; extreme quants (as in TestNEONExtremes) must still
// match the reference, and the arm64 tiers must agree bit for bit, on
// ragged row counts.
func TestNEONPackedWeightPath(t *testing.T) {
	rng := newRNG(31)
	for _, typ := range []tensor.Type{tensor.W4A8, tensor.W8A8} {
		const cols = 384
		stride, _ := tensor.RowBytes(typ, cols)
		for _, rows := range []int{3, 8, 13} {
			for _, fill := range []byte{0x00, 0xff, 0x80, 0x7f, 0x88} {
				w := make([]byte, rows*stride)
				for i := range w {
					w[i] = fill
				}
				for off := 0; off < len(w); off += typ.BlockBytes() {
					scaleFields(typ, w[off:off+typ.BlockBytes()], 0.5, 0)
				}
				x := make([]float32, 4*cols)
				for j := 0; j < cols; j++ {
					x[j], x[cols+j] = 1, -1
					x[2*cols+j], x[3*cols+j] = float32(1-2*(j%2)), float32(1-2*(j/16%2))
				}
				for _, tierName := range kernels.Tiers() {
					if !slices.Contains(kernels.PackedTypes(tierName), typ) {
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/%d/%#x", tierName, typ, rows, fill), func(t *testing.T) {
						m := &tensor.Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: w}
						checkPacked(t, tierName, m, x, 4)
					})
				}
			}
		}
		tiers := armTiers()
		for _, rows := range []int{1, 9, 37} {
			w := randomMatrix(rng, typ, rows, 1280)
			const n = 6
			x := randomVec(rng, n*w.Cols)
			outs := make([][]float32, len(tiers))
			for i, name := range tiers {
				restore := kernels.UseTier(name)
				kernels.Prepare(w)
				if !kernels.IsPrepared(w) {
					t.Fatalf("%s %s: not prepared", name, typ)
				}
				outs[i] = make([]float32, n*w.Rows)
				kernels.MatMul(outs[i], w, x, n)
				kernels.Release(w)
				restore()
				if j := sameBits(outs[0], outs[i]); j >= 0 {
					t.Errorf("%s %d rows: neon %v, %s %v at %d", typ, rows, outs[0][j], name, outs[i][j], j)
				}
			}
		}
	}
}

// TestNEONVec4Kernels: every arm64 tier has 4-row kernels for the 32-block
// quants and the K-quants (so that MatMul reads a weight row once per four
// activation rows, and checkKernel compares them with the one-row ones).
func TestNEONVec4Kernels(t *testing.T) {
	for _, name := range armTiers() {
		for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
			if k := kernels.KernelOf(name, typ); k == nil || !k.Vec4(nil, 0, nil, 0, 0, nil, 0) {
				t.Errorf("%s %s: no 4-row kernel", name, typ)
			}
		}
	}
}
