package kernels_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestAVXVNNISameBitsAsAVX2: the AVX-VNNI tier's packed kernels sum the
// integers exactly, as the AVX2 kernels do for every activation the
// quantizers make (int8 in [-127, 127]: no VPMADDUBSW pair sum reaches
// 2^15 in any of them), and repeat their float steps row for row, so
// every product (prepared or not, decode or batch, rows not a multiple of
// 8, 4-row tiles and their remainders) has the AVX2 tier's bits, and the
// AVX-512 tier's where the CPU has it; TestPackedKernels and
// TestTierMatMul check it against the generic reference like every tier.
func TestAVXVNNISameBitsAsAVX2(t *testing.T) {
	tiers := kernels.Tiers()
	if !slices.Contains(tiers, "avxvnni") {
		t.Skip("this CPU or build has no AVX-VNNI (with AVX2+FMA+F16C): the avxvnni tier is not tested here")
	}
	rng := newRNG(61)
	types := []tensor.Type{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K, tensor.Q5_K, tensor.F16, tensor.W4A8, tensor.W8A8}
	for _, typ := range types {
		cols := 512
		if typ.BlockSize() == 32 {
			cols = 416
		}
		if typ == tensor.W4A8 || typ == tensor.W8A8 {
			cols = 384
		}
		for _, rows := range []int{1, 8, 9, 16, 24, 43} {
			for _, prep := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%dx%d/prepared=%v", typ, rows, cols, prep), func(t *testing.T) {
					const n = 11 // two 4-row tiles and a remainder of 3
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
						for i := 0; i < n; i += 5 {
							one := make([]float32, rows)
							kernels.MatVec(one, w, x[i*cols:(i+1)*cols])
							if j := sameBits(one, out[i*rows:(i+1)*rows]); j >= 0 {
								t.Fatalf("%s: MatVec differs from MatMul row %d at %d", tierName, i, j)
							}
						}
						return out
					}
					want, got := run("avx2"), run("avxvnni")
					if j := sameBits(got, want); j >= 0 {
						t.Fatalf("avxvnni %v, avx2 %v at %d", got[j], want[j], j)
					}
					if slices.Contains(tiers, "avx512") {
						if j := sameBits(run("avx512"), got); j >= 0 {
							t.Fatalf("avx512 differs from avxvnni at %d", j)
						}
					}
				})
			}
		}
	}
}

// TestTierPreference: start-up picks the first tier the CPU runs in the
// order avx512 > avxvnni > avx2 > generic (i8mm only when pinned).
func TestTierPreference(t *testing.T) {
	avail := kernels.TiersAvailable()
	if avail[len(avail)-1] != "generic" {
		t.Fatalf("TiersAvailable %v does not end with generic", avail)
	}
	order := []string{"avx512", "avxvnni", "avx2", "generic"}
	last := -1
	for _, name := range avail {
		if i := slices.Index(order, name); i >= 0 {
			if i < last {
				t.Fatalf("TiersAvailable %v is not in the order %v", avail, order)
			}
			last = i
		}
	}
	if os.Getenv(kernels.EnvKernels) != "" {
		t.Skipf("%s is set: the start-up pick is not tested", kernels.EnvKernels)
	}
	want := avail[0]
	if want == "i8mm" {
		want = avail[1]
	}
	if got := kernels.Tier(); got != want {
		t.Fatalf("start-up tier %s, want %s (available %v)", got, want, avail)
	}
}
