package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// VecDot and VecAxpy against float64 sums, every length up to 300 so every
// unrolled loop and tail is hit. Tolerance: 1e-6 of the sum of |terms|
// (float32 rounding of a reordered sum).
func TestVecDotAxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 300; n++ {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		var want, mag float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		if got := VecDot(a, b); math.Abs(float64(got)-want) > 1e-6*mag+1e-30 {
			t.Errorf("n=%d: VecDot %g, want %g", n, got, want)
		}
		if got := vecDotGo(a, b); math.Abs(float64(got)-want) > 1e-6*mag+1e-30 {
			t.Errorf("n=%d: vecDotGo %g, want %g", n, got, want)
		}
		y := append([]float32(nil), b...)
		VecAxpy(y, a, 0.37)
		for i := range y {
			w := float64(b[i]) + 0.37*float64(a[i])
			if math.Abs(float64(y[i])-w) > 1e-6*(math.Abs(float64(b[i]))+math.Abs(0.37*float64(a[i]))) {
				t.Fatalf("n=%d: VecAxpy[%d] = %g, want %g", n, i, y[i], w)
			}
		}
	}
}

func BenchmarkVecDot256(b *testing.B) {
	x, y := make([]float32, 256), make([]float32, 256)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	b.SetBytes(2 * 4 * 256)
	for b.Loop() {
		VecDot(x, y)
	}
}
