package kernels

import "fmt"

// VecDot returns the dot product of two float32 vectors of equal length
// (attention scores). The SIMD versions sum in a different order than
// vecDotGo: results agree to float32 rounding, not bit for bit.
func VecDot(a, b []float32) float32 {
	if len(a) != len(b) {
		panic("kernels: VecDot of vectors of different lengths")
	}
	return vecDot(a, b)
}

// VecAxpy adds s*x to y (attention's weighted sum of values).
func VecAxpy(y, x []float32, s float32) {
	if len(x) != len(y) {
		panic("kernels: VecAxpy of vectors of different lengths")
	}
	vecAxpy(y, x, s)
}

func vecDotGo(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func vecAxpyGo(y, x []float32, s float32) {
	for i, v := range x {
		y[i] += s * v
	}
}

// DotRows sets out[i] = VecDot(q, k[i*stride:i*stride+len(q)]) * scale for
// every i < len(out): attention scores against keys stored stride floats
// apart, bit-identical to that loop of VecDot calls (without a call per
// key). The rows may overlap (stride < len(q): a 1-channel convolution's
// windows).
func DotRows(out, q, k []float32, stride int, scale float32) {
	checkSpan("DotRows", len(out), len(q), len(k), stride)
	dotRows(out, q, k, stride, scale)
}

// AxpyRows adds p[i] * v[i*stride:i*stride+len(y)] to y for i = 0, 1, ...
// len(p)-1 in turn: attention's weighted sum of values stored stride
// floats apart, bit-identical to that loop of VecAxpy calls (y stays in
// registers while the rows pass).
func AxpyRows(y, p, v []float32, stride int) {
	checkRows("AxpyRows", len(p), len(y), len(v), stride)
	axpyRows(y, p, v, stride)
}

// checkRows panics unless n rows of width floats, stride apart, fit in
// size floats.
func checkRows(op string, n, width, size, stride int) {
	if n > 0 && stride < width {
		panic(fmt.Sprintf("kernels: %s: %d rows of %d (stride %d) in %d floats", op, n, width, stride, size))
	}
	checkSpan(op, n, width, size, stride)
}

// checkSpan is checkRows for rows that may overlap (0 <= stride < width).
func checkSpan(op string, n, width, size, stride int) {
	if n > 0 && (stride < 0 || (n-1)*stride+width > size) {
		panic(fmt.Sprintf("kernels: %s: %d rows of %d (stride %d) in %d floats", op, n, width, stride, size))
	}
}

func dotRowsGo(out, q, k []float32, stride int, scale float32) {
	for i := range out {
		out[i] = vecDotGo(q, k[i*stride:i*stride+len(q)]) * scale
	}
}

func axpyRowsGo(y, p, v []float32, stride int) {
	for i, s := range p {
		vecAxpyGo(y, v[i*stride:i*stride+len(y)], s)
	}
}
