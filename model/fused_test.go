package model_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// TestFusedRows: AddNormLinears, NormLinears and GatedFFN give exactly the
// bits of the separate passes they fuse (AddRows, RMSNormRows, Linears,
// ApplyRows, Linear), for weights of one activation type and of two (the
// fallback that normalizes every row first), on one thread and on two, in
// the tier in use.
func TestFusedRows(t *testing.T) {
	defer kernels.SetThreads(0)
	const d, f = 512, 768
	rng := rand.New(rand.NewPCG(11, 12))
	vec := func(m int) []float32 {
		v := make([]float32, m)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	tierName := kernels.Tier()
	// Gate and up of one activation type, then of two (Q4_0's and
	// Q4_K's), with an F16 down (float activations).
	for _, types := range [][3]tensor.Type{{tensor.Q4_K, tensor.Q6_K, tensor.Q4_K}, {tensor.Q4_0, tensor.Q4_K, tensor.F16}} {
		wg, wu, wd := quantizedMatrix(rng, types[0], f, d), quantizedMatrix(rng, types[1], f, d), quantizedMatrix(rng, types[2], d, f)
		norm := vec(d)
		for _, n := range []int{1, 3, 40} {
			for _, th := range []int{1, 2} {
				kernels.SetThreads(th)
				x0, res := vec(n*d), vec(n*d)
				// AddNormLinears against AddRows, RMSNormRows and Linears.
				x1, h1 := slices.Clone(x0), make([]float32, n*d)
				g1, u1 := make([]float32, n*f), make([]float32, n*f)
				model.AddRows(x1, res, n)
				model.RMSNormRows(h1, x1, norm, 1e-6)
				model.Linears(h1, n, []*tensor.Matrix{wg, wu}, g1, u1)
				x2, h2 := slices.Clone(x0), make([]float32, n*d)
				g2, u2 := make([]float32, n*f), make([]float32, n*f)
				model.AddNormLinears(h2, x2, res, norm, 1e-6, n, []*tensor.Matrix{wg, wu}, g2, u2)
				for _, c := range [][2][]float32{{x2, x1}, {h2, h1}, {g2, g1}, {u2, u1}} {
					if j := sameBits(c[0], c[1]); j >= 0 {
						t.Fatalf("%s %v n=%d threads=%d: AddNormLinears differs at %d: %v vs %v", tierName, types, n, th, j, c[0][j], c[1][j])
					}
				}
				// NormLinears against RMSNormRows and Linears.
				clear(h1)
				model.RMSNormRows(h1, x0, norm, 1e-6)
				model.Linears(h1, n, []*tensor.Matrix{wg, wu}, g1, u1)
				x2 = slices.Clone(x0)
				model.NormLinears(h2, x2, norm, 1e-6, n, []*tensor.Matrix{wg, wu}, g2, u2)
				for _, c := range [][2][]float32{{x2, x0}, {h2, h1}, {g2, g1}, {u2, u1}} {
					if j := sameBits(c[0], c[1]); j >= 0 {
						t.Fatalf("%s %v n=%d threads=%d: NormLinears differs at %d: %v vs %v", tierName, types, n, th, j, c[0][j], c[1][j])
					}
				}
				// GatedFFN against the separate passes.
				x1, h1 = slices.Clone(x0), slices.Clone(res)
				gatedFFNPasses(x1, h1, g1, u1, n, norm, wg, wu, wd)
				x2, h2 = slices.Clone(x0), slices.Clone(res)
				model.GatedFFN(x2, h2, g2, u2, n, norm, 1e-6, wg, wu, wd, kernels.SiLUMul)
				if j := sameBits(x2, x1); j >= 0 {
					t.Fatalf("%s %v n=%d threads=%d: GatedFFN differs at %d: %v vs %v", tierName, types, n, th, j, x2[j], x1[j])
				}
			}
		}
		for _, w := range []*tensor.Matrix{wg, wu, wd} {
			kernels.Release(w)
		}
	}
}

// gatedFFNPasses is GatedFFN as the separate passes it fuses (with
// SiLU): x += h, h = RMSNorm(x), gate and up, the activation, down,
// x += h.
func gatedFFNPasses(x, h, gate, up []float32, n int, norm []float32, wg, wu, wd *tensor.Matrix) {
	model.AddRows(x, h, n)
	model.RMSNormRows(h, x, norm, 1e-6)
	model.Linears(h, n, []*tensor.Matrix{wg, wu}, gate, up)
	model.ApplyRows(gate, up, n, kernels.SiLUMul)
	model.Linear(h, wd, gate, n)
	model.AddRows(x, h, n)
}

// sameBits returns the first index where a and b differ in bits, or -1.
func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
