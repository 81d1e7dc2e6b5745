package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSin32 measures Sin32 against math.Sin of the same float32 input:
// absolute error <= 2.5e-7 (float32 rounding of sin itself is up to
// 6e-8) over |y| up to 4e4, across the reduction limit 2^15 where it
// falls back to math.Sin; NaN for NaN and ±Inf.
func TestSin32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var worst float64
	check := func(y float32) {
		got, want := float64(Sin32(y)), math.Sin(float64(y))
		const tol = 2.5e-7
		if e := math.Abs(got - want); e > tol || math.IsNaN(got) {
			t.Fatalf("Sin32(%g) = %g, math.Sin %g, error %g > %g", y, got, want, e, tol)
		} else if e > worst {
			worst = e
		}
	}
	for _, y := range []float32{0, 1e-30, -1e-30, math.Pi / 2, math.Pi, -math.Pi, 100, sinReduceMax, -sinReduceMax, 4e4, 1e30} {
		check(y)
	}
	for _, scale := range []float64{1, 10, 100, 1e4, 4e4} {
		for range 200000 {
			check(float32((2*rng.Float64() - 1) * scale))
		}
	}
	for _, y := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		if v := Sin32(y); !math.IsNaN(float64(v)) {
			t.Errorf("Sin32(%v) = %v, want NaN", y, v)
		}
	}
	t.Logf("worst absolute error %.3g", worst)
}

// TestSnakeBeta checks the row kernel of every tier against x +
// inv*sin(a*x)^2 in float64: absolute error <= 2e-6*(1+inv) +
// 2e-7*|a*x|*inv (the sine's error through the square and inv, float32
// products) plus float32 rounding of the sum; in place gives the same
// bits as out of place. Out-of-range lanes sit inside and at the end of
// vectors (the SIMD tiers hand those vectors to the Go code).
func TestSnakeBeta(t *testing.T) {
	for tr := range numTiers {
		if supported[tr] {
			prev := setTier(tr)
			testSnakeBeta(t)
			setTier(prev)
		}
	}
}

func testSnakeBeta(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 8, 16, 64, 71, 1537} {
		x, a, inv := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 3)
			a[i] = float32(math.Exp(rng.NormFloat64()))
			inv[i] = float32(1 / (math.Exp(rng.NormFloat64()) + 1e-9))
		}
		x[0] = 1e6 // beyond the reduction: the math.Sin path
		if n > 40 {
			x[40] = -1e5
			x[n-1] = 4e4
		}
		dst := make([]float32, n)
		SnakeBeta(dst, x, a, inv)
		for i, v := range x {
			s := math.Sin(float64(a[i] * v))
			want := float64(v) + float64(inv[i])*s*s
			tol := 2e-6*(1+float64(inv[i])) + 2e-7*math.Abs(float64(a[i]*v))*float64(inv[i]) + 1.2e-7*math.Abs(want)
			if e := math.Abs(float64(dst[i]) - want); e > tol {
				t.Fatalf("%s n %d i %d: %g, want %g (error %g > %g)", Tier(), n, i, dst[i], want, e, tol)
			}
		}
		SnakeBeta(x, x, a, inv)
		for i := range x {
			if x[i] != dst[i] {
				t.Fatalf("in place differs at %d", i)
			}
		}
	}
}

func BenchmarkSnakeBeta(b *testing.B) {
	n := 1536
	x, a, inv := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], a[i], inv[i] = float32(i%37)/7-2.5, 1+float32(i%5)/4, 0.5
	}
	dst := make([]float32, n)
	b.Run("poly", func(b *testing.B) {
		for b.Loop() {
			SnakeBeta(dst, x, a, inv)
		}
	})
	b.Run("math.Sin", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				s := float32(math.Sin(float64(a[i] * v)))
				dst[i] = v + inv[i]*(s*s)
			}
		}
	})
}
