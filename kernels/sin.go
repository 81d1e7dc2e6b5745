package kernels

import "math"

// Sin approximation in float32 (Cody-Waite reduction by pi, odd
// polynomial of degree 9 on [-pi/2, pi/2], the usual minimax
// coefficients of float32 sine kernels). Branch-free for |y| <=
// sinReduceMax, so a vector twin is a straight translation; beyond that,
// where three float32 parts of pi no longer reduce exactly, it falls back
// to math.Sin.
const (
	invPi        = 0.31830988618379067154
	piA          = 3.140625
	piB          = 0.0009670257568359375
	piC          = 6.2771141529083251953e-7
	piD          = 1.2154201256553420762e-10
	sinC1        = -0.166666597127914428710938
	sinC2        = 0.00833307858556509017944336
	sinC3        = -0.0001981069071916863322258
	sinC4        = 2.6083159809786593541503e-06
	sinReduceMax = 1 << 15
)

// Sin32 is sin(y) for float32 y within 2.5e-7 absolute of math.Sin
// (TestSin32; measured worst 1.2e-7 for |y| up to 4e4); NaN and ±Inf
// give NaN.
func Sin32(y float32) float32 {
	if !(y <= sinReduceMax && y >= -sinReduceMax) {
		return float32(math.Sin(float64(y)))
	}
	q := float32(math.Round(float64(y * invPi)))
	d := y - q*piA
	d -= q * piB
	d -= q * piC
	d -= q * piD
	s := d * d
	u := float32(sinC4)
	u = u*s + sinC3
	u = u*s + sinC2
	u = u*s + sinC1
	r := s*u*d + d
	if int64(q)&1 != 0 {
		r = -r
	}
	return r
}

// SnakeBeta writes x + inv*sin(a*x)^2 elementwise (one row of channels:
// a and inv per channel) to dst, which may be x. The square makes the
// sign of the reduced sine irrelevant. The SIMD tiers run the same
// reduction and polynomial on whole vectors (FMA steps, so they differ
// from the Go code by rounding); an element's result depends only on its
// inputs and its position in the row.
func SnakeBeta(dst, x, a, inv []float32) {
	if len(x) == 0 {
		return
	}
	_, _, _ = dst[len(x)-1], a[len(x)-1], inv[len(x)-1]
	done := snakeBetaSIMD(tier(current.Load()), dst, x, a, inv)
	snakeBetaGo(dst[done:len(x)], x[done:], a[done:len(x)], inv[done:len(x)])
}

// snakeBetaGo is SnakeBeta's reference code.
func snakeBetaGo(dst, x, a, inv []float32) {
	for i, v := range x {
		y := a[i] * v
		var sn float32
		if y <= sinReduceMax && y >= -sinReduceMax {
			q := float32(math.Round(float64(y * invPi)))
			d := y - q*piA
			d -= q * piB
			d -= q * piC
			d -= q * piD
			s := d * d
			u := float32(sinC4)
			u = u*s + sinC3
			u = u*s + sinC2
			u = u*s + sinC1
			sn = s*u*d + d
		} else {
			sn = float32(math.Sin(float64(y)))
		}
		dst[i] = v + inv[i]*(sn*sn)
	}
}
