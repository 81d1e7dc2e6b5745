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

// TestDotAxpyRows: DotRows and AxpyRows equal loops of VecDot and VecAxpy
// bit for bit (every width up to 300, so every loop and tail, and strides
// wider than the rows), in every tier; the last row may end the buffer.
func TestDotAxpyRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tierName := range allTiers() {
		if !supported[tierName] {
			continue
		}
		prev := setTier(tierName)
		for width := 0; width <= 300; width += 1 + width/16 {
			for _, n := range []int{0, 1, 3, 8, 33} {
				stride := width + r.IntN(3)*8 + r.IntN(2)
				size := 0
				if n > 0 {
					size = (n-1)*stride + width
				}
				k := make([]float32, size)
				for i := range k {
					k[i] = float32(r.NormFloat64())
				}
				q := make([]float32, width)
				y := make([]float32, width)
				for i := range q {
					q[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				p := make([]float32, n)
				for i := range p {
					p[i] = float32(r.Float64())
				}
				got := make([]float32, n)
				DotRows(got, q, k, stride, 0.0625)
				for i := 0; i < n; i++ {
					if want := VecDot(q, k[i*stride:i*stride+width]) * 0.0625; math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("%s width %d n %d: DotRows[%d] = %v, VecDot %v", tierName, width, n, i, got[i], want)
					}
				}
				// Overlapping rows (a 1-channel convolution's windows).
				if o := 1 + r.IntN(max(width, 1)); n > 0 && (n-1)*o+width <= len(k) {
					DotRows(got, q, k, o, 1)
					for i := 0; i < n; i++ {
						if want := VecDot(q, k[i*o:i*o+width]); math.Float32bits(got[i]) != math.Float32bits(want) {
							t.Fatalf("%s width %d n %d stride %d: DotRows[%d] = %v, VecDot %v", tierName, width, n, o, i, got[i], want)
						}
					}
				}
				want := append([]float32(nil), y...)
				for i, s := range p {
					VecAxpy(want, k[i*stride:i*stride+width], s)
				}
				AxpyRows(y, p, k, stride)
				for e := range y {
					if math.Float32bits(y[e]) != math.Float32bits(want[e]) {
						t.Fatalf("%s width %d n %d: AxpyRows[%d] = %v, VecAxpy loop %v", tierName, width, n, e, y[e], want[e])
					}
				}
			}
		}
		setTier(prev)
	}
	defer func() {
		if recover() == nil {
			t.Error("DotRows past the end of k did not panic")
		}
	}()
	DotRows(make([]float32, 3), make([]float32, 8), make([]float32, 23), 8, 1)
}

func BenchmarkAttentionRows(b *testing.B) {
	const hd, kvd, n = 256, 512, 512
	r := rand.New(rand.NewPCG(5, 6))
	k := make([]float32, n*kvd)
	for i := range k {
		k[i] = float32(r.NormFloat64())
	}
	q := k[:hd]
	sc := make([]float32, n)
	o := make([]float32, hd)
	b.Run("calls", func(b *testing.B) {
		for b.Loop() {
			for i := range sc {
				sc[i] = VecDot(q, k[i*kvd:i*kvd+hd]) * 0.0625
			}
			clear(o)
			for i, p := range sc {
				VecAxpy(o, k[i*kvd:i*kvd+hd], p)
			}
		}
	})
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			DotRows(sc, q, k, kvd, 0.0625)
			clear(o)
			AxpyRows(o, sc, k, kvd)
		}
	})
}
