package kernels

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
