package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSnakeBetaNEONBits: on arm64 every tier's SnakeBeta gives the Go
// kernel's bits (the compiler fuses its multiply-adds as the NEON code
// does, and both round q half away from zero), including rows with
// lanes past the reduction range, NaN and infinities in ragged tails.
func TestSnakeBetaNEONBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 3, 4, 5, 8, 17, 64, 1539} {
		x, a, inv := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Exp(3*rng.NormFloat64()))
			a[i] = float32(math.Exp(rng.NormFloat64()))
			inv[i] = float32(1 / (math.Exp(rng.NormFloat64()) + 1e-9))
		}
		specials := []float32{1e6, -4e4, float32(math.NaN()), float32(math.Inf(1)), 1 << 15, -(1 << 15), 0}
		for i, v := range specials {
			if 5*i < n {
				x[5*i], a[5*i] = v, 1
			}
		}
		want := make([]float32, n)
		snakeBetaGo(want, x, a, inv)
		for tr := range numTiers {
			if !supported[tr] {
				continue
			}
			prev := setTier(tr)
			got := make([]float32, n)
			SnakeBeta(got, x, a, inv)
			setTier(prev)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%s n %d i %d (x %g a %g): %g, Go kernel %g", tr, n, i, x[i], a[i], got[i], want[i])
				}
			}
		}
	}
}
