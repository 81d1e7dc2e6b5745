package kernels

import (
	"fmt"
	"math"
)

func sameLen(op string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("kernels: %s: lengths %d and %d differ", op, a, b))
	}
}

// RMSNorm sets out = x / sqrt(mean(x²) + eps) * w, as ggml's rms_norm
// followed by mul: the squares are float32 products summed in float64,
// mean and scale are float32, out = float32(x*scale) * w. A nil w skips
// the weight multiply. out may alias x. The SIMD tiers add the squares in
// another order (4 float64 lanes), which can change the float32 mean by
// one rounding in rare cases; everything else is bit-identical.
func RMSNorm(out, x, w []float32, eps float32) {
	sameLen("RMSNorm", len(out), len(x))
	if w != nil {
		sameLen("RMSNorm weight", len(w), len(x))
	}
	if len(x) == 0 {
		return
	}
	sum := sumSquares(x)
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps))) // sqrt is correctly rounded, like sqrtf
	scaleRow(out, x, w, scale)
}

func sumSquaresGo(x []float32) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	return sum
}

// scaleRowGo sets out = x*s, times w unless w is nil.
func scaleRowGo(out, x, w []float32, s float32) {
	for i, v := range x {
		y := v * s
		if w != nil {
			y *= w[i]
		}
		out[i] = y
	}
}

// Softmax replaces x with exp(x - max) / sum, in place. The difference and
// its exponential are computed in float64 and rounded to float32 (ggml
// subtracts in float32 and uses expf, which costs up to a few 1e-6
// relative on entries far below the maximum); the sum is accumulated in
// float64 as in ggml, and the values are multiplied by float32(1/sum). A
// row that is entirely -Inf gives NaN, as in ggml. The SIMD tiers compute
// the exponential in float32 (the difference exactly, as a float32 sum
// plus its rounding error): within 3 float32 roundings of the reference
// (relative), and exactly 0 where exp(x - max) is below the smallest
// normal float32 (1.2e-38).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	_, sum := expMax(x)
	Scale(x, float32(1/sum))
}

// ExpMax is Softmax before its division: it replaces x with exp(x - m),
// m = max(x), and returns m and the float64 sum of the new values, with
// the same precision and edge cases (Softmax is ExpMax followed by
// Scale(x, float32(1/sum)), bit for bit). Attention combines such partial
// softmaxes of blocks of keys. An empty x gives -Inf and 0.
func ExpMax(x []float32) (m float32, sum float64) {
	if len(x) == 0 {
		return float32(math.Inf(-1)), 0
	}
	return expMax(x)
}

func expMaxGo(x []float32) (float32, float64) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v) - float64(m)))
		x[i] = e
		sum += float64(e)
	}
	return m, sum
}

// SiLU replaces x with x*sigmoid(x) = x/(1+exp(-x)), computed in float64
// and rounded once (generic tier). The SIMD tiers compute it in float32
// from e = exp(-|x|) (x/(1+e) for x >= 0, x*e/(1+e) below): within 3
// roundings (relative 3.6e-7) of the exact value, except where the result
// is below the smallest normal float32.
func SiLU(x []float32) { silu(x) }

// SiLUMul sets x[i] = SiLU(x[i]) * y[i] (the gated feed-forward's
// activation and product in one pass).
func SiLUMul(x, y []float32) {
	sameLen("SiLUMul", len(x), len(y))
	siluMul(x, y)
}

func siluGo(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(f / (1 + math.Exp(-f)))
	}
}

// Sigmoid replaces x with 1/(1+exp(-x)), computed in float64 and rounded
// once (generic tier; the SIMD tiers as SiLU).
func Sigmoid(x []float32) { sigmoid(x) }

func sigmoidGo(x []float32) {
	for i, v := range x {
		x[i] = float32(1 / (1 + math.Exp(-float64(v))))
	}
}

// GELUErf replaces x with the exact GELU 0.5*x*(1+erf(x/√2)) (not
// llama.cpp's tanh approximation). The generic tier computes it in
// float64 and rounds once, as 0.5*x*erfc(-x/√2), the same function,
// because 1+erf loses all precision for x below about -6 (values under
// 1e-9 there). The SIMD tiers evaluate polynomial approximations in
// float32 (erf for |x| < 1.06, erfc as exp(-z²) times an erfcx fit
// beyond): |error| <= 1.5e-7*|x| for every x (measured 1.04e-7 over a
// dense grid and the extremes; see TestGELUErfAccuracy).
func GELUErf(x []float32) { geluErf(x) }

// GELUErfMul sets x[i] = GELUErf(x[i]) * y[i].
func GELUErfMul(x, y []float32) {
	sameLen("GELUErfMul", len(x), len(y))
	geluErfMul(x, y)
}

func geluErfGo(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * math.Erfc(-f/math.Sqrt2))
	}
}

// Add sets dst[i] += a[i].
func Add(dst, a []float32) {
	sameLen("Add", len(dst), len(a))
	add(dst, a)
}

func addGo(dst, a []float32) {
	for i, v := range a {
		dst[i] += v
	}
}

// Mul sets dst[i] *= a[i].
func Mul(dst, a []float32) {
	sameLen("Mul", len(dst), len(a))
	mulRow(dst, a)
}

func mulGo(dst, a []float32) {
	for i, v := range a {
		dst[i] *= v
	}
}

// Scale sets x[i] *= s.
func Scale(x []float32, s float32) { scaleRow(x, x, nil, s) }
