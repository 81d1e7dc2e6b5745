package kernels_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestAVX512SameBitsAsAVX2: the AVX-512 tier's kernels sum the integers
// exactly and repeat the AVX2 kernels' float steps row for row, so every
// product (prepared or not, decode or batch) has the AVX2 tier's bits;
// TestPackedKernels and TestTierMatMul check it against the generic
// reference like every tier.
func TestAVX512SameBitsAsAVX2(t *testing.T) {
	if !slices.Contains(kernels.Tiers(), "avx512") {
		t.Skip("this CPU or build has no AVX-512 F/BW/VL + VNNI: the avx512 tier is not tested here")
	}
	rng := newRNG(51)
	types := []tensor.Type{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.F16, tensor.BF16, tensor.F32, tensor.W4A8, tensor.W8A8, tensor.W4A16}
	for _, typ := range types {
		for _, rows := range []int{1, 8, 9, 16, 17, 24, 43} {
			// One to three super-blocks: the one-row K-quant kernels
			// end their pipelined loop differently for odd and even counts.
			cols := 256 * (1 + rows%3)
			if typ.BlockSize() == 1 {
				// The float kernels take four 8-column chunks a step:
				// every count of chunks left over, and a ragged tail.
				cols += 8*(rows%5) + rows%2
			}
			if typ.BlockSize() == 32 {
				cols = 416
			}
			if typ == tensor.W4A8 || typ == tensor.W8A8 {
				cols = 384
			}
			if typ == tensor.W4A16 {
				cols = 128 * (1 + rows%3) // one to three groups
			}
			for _, prep := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%dx%d/prepared=%v", typ, rows, cols, prep), func(t *testing.T) {
					const n = 13 // eight, four and one activation rows
					x := randomVec(rng, n*cols)
					w := randomMatrix(rng, typ, rows, cols)
					run := func(tierName string) []float32 {
						defer kernels.UseTier(tierName)()
						if prep {
							prepareGuarded(t, w)
							defer kernels.Release(w)
						}
						out := make([]float32, n*rows)
						kernels.MatMul(out, w, x, n)
						one := make([]float32, rows)
						kernels.MatVec(one, w, x[:cols])
						if j := sameBits(one, out[:rows]); j >= 0 {
							t.Fatalf("%s: MatVec differs from MatMul row 0 at %d", tierName, j)
						}
						return out
					}
					want := run("avx2")
					// Both prefetch variants of the one-row kernels
					// (PREFETCHNTA runs on AMD CPUs, T0 on the others),
					// and the AVX2 one-row kernels beside the AVX-512
					// batch ones (Zen 4).
					for _, c := range []struct{ nta, avx2OneRow bool }{{false, false}, {true, false}, {false, true}} {
						oldNTA := kernels.SetNTAStream(c.nta)
						oldOne := kernels.SetAVX2OneRow(c.avx2OneRow)
						got := run("avx512")
						kernels.SetNTAStream(oldNTA)
						kernels.SetAVX2OneRow(oldOne)
						if j := sameBits(got, want); j >= 0 {
							t.Fatalf("avx512 (%+v) %v, avx2 %v at %d", c, got[j], want[j], j)
						}
					}
				})
			}
		}
	}
}
