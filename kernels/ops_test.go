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

	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
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
				t.Errorf("%s: Sigmoid(%v) = %v, want %v", tierName, v, sig[i], s)
			}
			if !relClose(silu[i], f*s, 4*oneRounding, 1e-30) {
				t.Errorf("%s: SiLU(%v) = %v, want %v", tierName, v, silu[i], f*s)
			}
			// GELU from its definition with erf; for x below about -6 the
			// 1+erf here cancels, hence the absolute floor.
			g := 0.5 * f * (1 + math.Erf(f/math.Sqrt2))
			if !geluClose(tierName, gelu[i], v, g) {
				t.Errorf("%s: GELUErf(%v) = %v, want %v", tierName, v, gelu[i], g)
			}
		}
		// Known values of the exact GELU.
		g := []float32{1, -1, 2, -10}
		kernels.GELUErf(g)
		for i, want := range []float64{0.8413447460685429, -0.15865525393145707, 1.9544997361036416, -7.619853024160527e-23} {
			if !geluClose(tierName, g[i], []float32{1, -1, 2, -10}[i], want) {
				t.Errorf("%s: GELU known value %d: %v, want %v", tierName, i, g[i], want)
			}
		}
		restore()
	}
}

// geluBound is the SIMD tiers' stated GELU error bound, relative to |x|
// (plus the rounding of subnormal results).
const geluBound = 1.5e-7

// geluClose: the generic tier rounds the exact value once (relative
// error, with an absolute floor where the test's own 1+erf cancels); the
// SIMD tiers are within geluBound*|x|.
func geluClose(tierName string, got, x float32, want float64) bool {
	if tierName == "generic" {
		return relClose(got, want, 4*oneRounding, 1e-30) || math.Abs(float64(got)-want) <= 1e-14
	}
	return math.Abs(float64(got)-want) <= geluBound*math.Abs(float64(x))+0x1p-150
}

// TestGELUErfAccuracy: every tier's GELU against 0.5*x*erfc(-x/√2) in
// float64 on a dense grid over [-12, 12], on magnitudes from 1e-40 to
// 3e38, and on the special values.
func TestGELUErfAccuracy(t *testing.T) {
	var xs []float32
	for i := -1200000; i <= 1200000; i++ {
		xs = append(xs, float32(float64(i)*1e-5))
	}
	for e := -45.0; e <= 38.5; e += 0.25 {
		v := float32(math.Pow(10, e))
		xs = append(xs, v, -v, math.Nextafter32(v, 0), -math.Nextafter32(v, 0))
	}
	xs = append(xs, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 0)
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		got := append([]float32(nil), xs...)
		kernels.GELUErf(got)
		worst := 0.0
		for i, v := range xs {
			f := float64(v)
			want := 0.5 * f * math.Erfc(-f/math.Sqrt2)
			if math.IsInf(want, 0) || math.IsNaN(want) { // 0.5*x overflows nowhere; x*erfc can't
				t.Fatalf("reference at %v: %v", v, want)
			}
			err := math.Abs(float64(got[i]) - want)
			if tierName == "generic" {
				if float32(want) != got[i] {
					t.Fatalf("generic: GELUErf(%v) = %v, want %v rounded once", v, got[i], want)
				}
				continue
			}
			if math.Abs(f) > 1e-30 {
				worst = max(worst, err/math.Abs(f))
			}
			// Plus half the smallest subnormal: a result that small
			// rounds to a multiple of it.
			if !(err <= geluBound*math.Abs(f)+0x1p-150) {
				t.Fatalf("%s: GELUErf(%v) = %v, want %v (|err| %.3g > %.3g*|x|)", tierName, v, got[i], want, err, geluBound)
			}
		}
		if tierName != "generic" {
			t.Logf("%s: max |err|/|x| = %.3g over %d values (|x| > 1e-30)", tierName, worst, len(xs))
		}
		sp := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
		kernels.GELUErf(sp)
		// The reference: 0.5*Inf*erfc(-Inf) = Inf; 0.5*-Inf*erfc(Inf) = NaN.
		if !math.IsInf(float64(sp[0]), 1) || !math.IsNaN(float64(sp[1])) || !math.IsNaN(float64(sp[2])) {
			t.Errorf("%s: GELUErf(+Inf, -Inf, NaN) = %v", tierName, sp)
		}
		restore()
	}
}

// TestActivationSpecials: SiLU and Sigmoid at the infinities and NaN,
// as the float64 formulas give them.
func TestActivationSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		s := []float32{inf, -inf, nan}
		kernels.SiLU(s)
		if !math.IsInf(float64(s[0]), 1) || !math.IsNaN(float64(s[1])) || !math.IsNaN(float64(s[2])) {
			t.Errorf("%s: SiLU(+Inf, -Inf, NaN) = %v", tierName, s)
		}
		g := []float32{inf, -inf, nan}
		kernels.Sigmoid(g)
		if g[0] != 1 || g[1] != 0 || !math.IsNaN(float64(g[2])) {
			t.Errorf("%s: Sigmoid(+Inf, -Inf, NaN) = %v", tierName, g)
		}
		restore()
	}
}

// TestActivationTails: every length (so every tail), each element's
// result independent of its position and of the length; the fused
// forms equal the activation followed by Mul bit for bit.
func TestActivationTails(t *testing.T) {
	rng := newRNG(24)
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		ops := []struct {
			name string
			f    func([]float32)
		}{{"GELUErf", kernels.GELUErf}, {"SiLU", kernels.SiLU}, {"Sigmoid", kernels.Sigmoid}}
		for n := 0; n <= 40; n++ {
			x := randomVec(rng, n)
			y := randomVec(rng, n)
			for _, op := range ops {
				got := append([]float32(nil), x...)
				op.f(got)
				for i, v := range x {
					one := []float32{v}
					op.f(one)
					if math.Float32bits(one[0]) != math.Float32bits(got[i]) {
						t.Fatalf("%s %s: n=%d element %d: %v alone, %v in the row", tierName, op.name, n, i, one[0], got[i])
					}
				}
			}
			for _, c := range []struct {
				name  string
				act   func([]float32)
				fused func(x, y []float32)
			}{{"GELUErfMul", kernels.GELUErf, kernels.GELUErfMul}, {"SiLUMul", kernels.SiLU, kernels.SiLUMul}} {
				want := append([]float32(nil), x...)
				c.act(want)
				kernels.Mul(want, y)
				got := append([]float32(nil), x...)
				c.fused(got, y)
				if j := sameBits(got, want); j >= 0 {
					t.Fatalf("%s %s: n=%d: element %d = %v, want %v", tierName, c.name, n, j, got[j], want[j])
				}
			}
			a := append([]float32(nil), x...)
			kernels.Add(a, y)
			m := append([]float32(nil), x...)
			kernels.Mul(m, y)
			sc := append([]float32(nil), x...)
			kernels.Scale(sc, 0.37)
			for i := range x {
				if a[i] != x[i]+y[i] || m[i] != x[i]*y[i] || sc[i] != x[i]*0.37 {
					t.Fatalf("%s: n=%d element %d: Add %v Mul %v Scale %v", tierName, n, i, a[i], m[i], sc[i])
				}
			}
		}
		restore()
	}
}

func TestSoftmax(t *testing.T) {
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		testSoftmax(t, tierName)
		restore()
	}
}

func testSoftmax(t *testing.T, tierName string) {
	rng := newRNG(21)
	for _, n := range []int{1, 7, 8, 9, 64, 1000, 1001} {
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
				t.Errorf("%s: n=%d: softmax[%d] = %v, want %v", tierName, n, i, x[i], want[i]/sum)
			}
			total += float64(x[i])
		}
		if math.Abs(total-1) > 1e-6 {
			t.Errorf("%s: n=%d: sums to %v", tierName, n, total)
		}
	}
	big := []float32{1000, 1000, -1000}
	kernels.Softmax(big)
	if big[0] != 0.5 || big[1] != 0.5 || big[2] != 0 {
		t.Errorf("%s: large inputs: %v", tierName, big)
	}
	inf := float32(math.Inf(1))
	for _, n := range []int{3, 11} {
		masked := make([]float32, n)
		for i := range masked {
			masked[i] = -inf
		}
		kernels.Softmax(masked)
		for i, v := range masked {
			if !math.IsNaN(float64(v)) {
				t.Errorf("%s: all -Inf (n=%d): [%d] = %v, want NaN", tierName, n, i, v)
			}
		}
		withNaN := make([]float32, n)
		withNaN[n-2] = float32(math.NaN())
		kernels.Softmax(withNaN)
		for i, v := range withNaN {
			if !math.IsNaN(float64(v)) {
				t.Errorf("%s: a NaN (n=%d): [%d] = %v, want NaN", tierName, n, i, v)
			}
		}
		one := make([]float32, n)
		for i := range one {
			one[i] = -inf
		}
		one[n-1] = -3
		kernels.Softmax(one)
		for i, v := range one {
			if want := float32(0); i == n-1 {
				if v != 1 {
					t.Errorf("%s: one finite (n=%d): [%d] = %v, want 1", tierName, n, i, v)
				}
			} else if v != want {
				t.Errorf("%s: one finite (n=%d): [%d] = %v, want 0", tierName, n, i, v)
			}
		}
	}
}

// TestExpMax checks that ExpMax is Softmax before its division, bit for
// bit, in every tier, and returns the maximum and the sum.
func TestExpMax(t *testing.T) {
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		rng := newRNG(22)
		for _, n := range []int{1, 7, 8, 9, 64, 129} {
			x := randomVec(rng, n)
			for i := range x {
				x[i] *= 8
			}
			want := append([]float32(nil), x...)
			kernels.Softmax(want)
			mx := float32(math.Inf(-1))
			for _, v := range x {
				mx = max(mx, v)
			}
			m, sum := kernels.ExpMax(x)
			var total float64
			for _, v := range x {
				total += float64(v)
			}
			if m != mx || math.Abs(total-sum) > 1e-12*sum {
				t.Errorf("%s: n=%d: ExpMax = %v, %v; want max %v, sum %v", tierName, n, m, sum, mx, total)
			}
			kernels.Scale(x, float32(1/sum))
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Errorf("%s: n=%d: ExpMax then Scale [%d] = %v, Softmax %v", tierName, n, i, x[i], want[i])
				}
			}
		}
		if m, sum := kernels.ExpMax(nil); !math.IsInf(float64(m), -1) || sum != 0 {
			t.Errorf("%s: ExpMax(nil) = %v, %v", tierName, m, sum)
		}
		// A softmax row is on every attention step's path: no allocation,
		// with a tail past the vector width too.
		row := randomVec(rng, 17)
		if n := testing.AllocsPerRun(20, func() { kernels.ExpMax(row) }); n != 0 && !raceEnabled {
			t.Errorf("%s: ExpMax of 17 floats allocates %v times", tierName, n)
		}
		restore()
	}
}

func TestRMSNorm(t *testing.T) {
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		testRMSNorm(t)
		restore()
	}
}

func testRMSNorm(t *testing.T) {
	rng := newRNG(22)
	for _, n := range []int{1, 7, 256, 2047, 2048} {
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
