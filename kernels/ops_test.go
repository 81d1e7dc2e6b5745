package kernels_test

import (
	"math"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
)

// relClose reports |got-want| <= tol*max(|want|, floor).
func relClose(got float32, want, tol, floor float64) bool {
	return math.Abs(float64(got)-want) <= tol*math.Max(math.Abs(want), floor)
}

// One float32 rounding of a float64 result: relative 2^-24, plus slack.
const oneRounding = 1.2e-7

func TestActivations(t *testing.T) {
	rng := newRNG(20)
	x := randomVec(rng, 2000)
	for i := range x {
		x[i] *= 4
	}
	x = append(x, 0, -0.5, 0.5, 30, -30, 100, -100)

	silu := append([]float32(nil), x...)
	kernels.SiLU(silu)
	sig := append([]float32(nil), x...)
	kernels.Sigmoid(sig)
	gelu := append([]float32(nil), x...)
	kernels.GELUErf(gelu)
	for i, v := range x {
		f := float64(v)
		// Sigmoid written via tanh, an independent formula; for negative
		// x as e^x/(1+e^x), where 1+tanh would cancel.
		s := 0.5 * (1 + math.Tanh(f/2))
		if f < 0 {
			s = math.Exp(f) / (1 + math.Exp(f))
		}
		if !relClose(sig[i], s, 4*oneRounding, 1e-30) {
			t.Errorf("Sigmoid(%v) = %v, want %v", v, sig[i], s)
		}
		if !relClose(silu[i], f*s, 4*oneRounding, 1e-30) {
			t.Errorf("SiLU(%v) = %v, want %v", v, silu[i], f*s)
		}
		// GELU from its definition with erf; for x below about -6 the
		// 1+erf here cancels, hence the absolute floor.
		g := 0.5 * f * (1 + math.Erf(f/math.Sqrt2))
		if !relClose(gelu[i], g, 4*oneRounding, 1e-30) && math.Abs(float64(gelu[i])-g) > 1e-14 {
			t.Errorf("GELUErf(%v) = %v, want %v", v, gelu[i], g)
		}
	}
	// Known values of the exact GELU.
	g := []float32{1, -1, 2, -10}
	kernels.GELUErf(g)
	for i, want := range []float64{0.8413447460685429, -0.15865525393145707, 1.9544997361036416, -7.619853024160527e-23} {
		if !relClose(g[i], want, oneRounding, 0) {
			t.Errorf("GELU known value %d: %v, want %v", i, g[i], want)
		}
	}
}

func TestSoftmax(t *testing.T) {
	rng := newRNG(21)
	for _, n := range []int{1, 7, 64, 1000} {
		x := randomVec(rng, n)
		for i := range x {
			x[i] *= 8
		}
		if n > 2 {
			x[1] = float32(math.Inf(-1)) // a masked position
		}
		want := make([]float64, n)
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		var sum float64
		for i, v := range x {
			want[i] = math.Exp(float64(v) - m)
			sum += want[i]
		}
		kernels.Softmax(x)
		var total float64
		for i := range x {
			if !relClose(x[i], want[i]/sum, 4*oneRounding, 1e-30) {
				t.Errorf("n=%d: softmax[%d] = %v, want %v", n, i, x[i], want[i]/sum)
			}
			total += float64(x[i])
		}
		if math.Abs(total-1) > 1e-6 {
			t.Errorf("n=%d: sums to %v", n, total)
		}
	}
	big := []float32{1000, 1000, -1000}
	kernels.Softmax(big)
	if big[0] != 0.5 || big[1] != 0.5 || big[2] != 0 {
		t.Errorf("large inputs: %v", big)
	}
}

func TestRMSNorm(t *testing.T) {
	rng := newRNG(22)
	for _, n := range []int{1, 256, 2048} {
		x := randomVec(rng, n)
		w := randomVec(rng, n)
		const eps = 1e-6
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(ss/float64(n)+eps)
		out := make([]float32, n)
		kernels.RMSNorm(out, x, w, eps)
		noW := append([]float32(nil), x...)
		kernels.RMSNorm(noW, noW, nil, eps) // in place, no weight
		for i := range x {
			want := float64(x[i]) * r
			if !relClose(noW[i], want, 4*oneRounding, 1e-30) {
				t.Errorf("n=%d: RMSNorm[%d] = %v, want %v", n, i, noW[i], want)
			}
			if !relClose(out[i], want*float64(w[i]), 6*oneRounding, 1e-30) {
				t.Errorf("n=%d: weighted RMSNorm[%d] = %v, want %v", n, i, out[i], want*float64(w[i]))
			}
		}
	}
}

func TestElementwise(t *testing.T) {
	a := []float32{1, 2, 3}
	kernels.Add(a, []float32{0.5, -2, 1})
	kernels.Mul(a, []float32{2, 5, -1})
	kernels.Scale(a, 0.5)
	if a[0] != 1.5 || a[1] != 0 || a[2] != -2 {
		t.Errorf("got %v, want [1.5 0 -2]", a)
	}
}

// ropeRef rotates in float64 straight from the definition.
func ropeRef(x []float32, pos, rot int, theta float64, neox bool) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	for i := 0; i < rot/2; i++ {
		ang := float64(pos) * math.Pow(theta, -2*float64(i)/float64(rot))
		a, b := i, i+rot/2
		if !neox {
			a, b = 2*i, 2*i+1
		}
		x0, x1 := float64(x[a]), float64(x[b])
		out[a] = x0*math.Cos(ang) - x1*math.Sin(ang)
		out[b] = x0*math.Sin(ang) + x1*math.Cos(ang)
	}
	return out
}

func TestRoPE(t *testing.T) {
	rng := newRNG(23)
	const head = 64
	for _, c := range []struct {
		rot   int
		theta float64
	}{{64, 1e4}, {16, 5e6}, {32, 1e6}} {
		tab := kernels.NewRoPETable(c.rot, c.theta)
		if tab.Len() != 0 {
			t.Fatalf("new table has %d positions", tab.Len())
		}
		for _, pos := range []int{0, 1, 5, 63, 64, 1000, 4095, 40000} {
			for _, neox := range []bool{true, false} {
				x := randomVec(rng, head)
				want := ropeRef(x, pos, c.rot, c.theta, neox)
				got := append([]float32(nil), x...)
				if neox {
					tab.NeoX(got, pos)
				} else {
					tab.Interleaved(got, pos)
				}
				for i := range got {
					// cos/sin stored as float32 and two float32 products:
					// a few 1e-7 of the pair's magnitude.
					if math.Abs(float64(got[i])-want[i]) > 1e-6*4 {
						t.Errorf("rot %d theta %g pos %d neox %v: [%d] = %v, want %v", c.rot, c.theta, pos, neox, i, got[i], want[i])
					}
					if i >= c.rot && got[i] != x[i] {
						t.Errorf("dim %d beyond rot %d changed", i, c.rot)
					}
				}
			}
		}
		if tab.Len() <= 40000 || tab.Len() > 2*40001 {
			t.Errorf("table grew to %d positions", tab.Len())
		}
	}
}

// TestRoPEConcurrentGrowth: readers racing with growth see consistent
// tables (run with -race).
func TestRoPEConcurrentGrowth(t *testing.T) {
	tab := kernels.NewRoPETable(8, 1e4)
	ref := kernels.NewRoPETable(8, 1e4)
	ref.Ensure(3000)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for pos := g; pos < 3000; pos += 37 {
				x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
				y := append([]float32(nil), x...)
				tab.NeoX(x, pos)
				ref.NeoX(y, pos)
				if sameBits(x, y) >= 0 {
					t.Errorf("pos %d: %v vs %v", pos, x, y)
					return
				}
			}
		})
	}
	wg.Wait()
}
