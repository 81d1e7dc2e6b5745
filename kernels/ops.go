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
// the weight multiply. out may alias x.
func RMSNorm(out, x, w []float32, eps float32) {
	sameLen("RMSNorm", len(out), len(x))
	if w != nil {
		sameLen("RMSNorm weight", len(w), len(x))
	}
	if len(x) == 0 {
		return
	}
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps))) // sqrt is correctly rounded, like sqrtf
	for i, v := range x {
		y := v * scale
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
// row that is entirely -Inf gives NaN, as in ggml.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
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
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// SiLU replaces x with x*sigmoid(x) = x/(1+exp(-x)), computed in float64
// and rounded once.
func SiLU(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(f / (1 + math.Exp(-f)))
	}
}

// Sigmoid replaces x with 1/(1+exp(-x)), computed in float64 and rounded
// once.
func Sigmoid(x []float32) {
	for i, v := range x {
		x[i] = float32(1 / (1 + math.Exp(-float64(v))))
	}
}

// GELUErf replaces x with the exact GELU 0.5*x*(1+erf(x/√2)), computed in
// float64 and rounded once (not llama.cpp's tanh approximation). It is
// evaluated as 0.5*x*erfc(-x/√2), the same function, because 1+erf loses
// all precision for x below about -6 (values under 1e-9 there).
func GELUErf(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * math.Erfc(-f/math.Sqrt2))
	}
}

// Add sets dst[i] += a[i].
func Add(dst, a []float32) {
	sameLen("Add", len(dst), len(a))
	for i, v := range a {
		dst[i] += v
	}
}

// Mul sets dst[i] *= a[i].
func Mul(dst, a []float32) {
	sameLen("Mul", len(dst), len(a))
	for i, v := range a {
		dst[i] *= v
	}
}

// Scale sets x[i] *= s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
