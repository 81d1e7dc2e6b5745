//go:build amd64 && gc && !purego

package kernels

// dotLanes is the floats of a row one step of dot4Rows takes (two YMM
// registers).
const dotLanes = 16

//go:noescape
func f32ToF16AVX2(dst []uint16, src []float32)

// f32ToF16AVX2Row rounds 8 values at a time in assembly, Go the rest.
func f32ToF16AVX2Row(dst []uint16, src []float32) {
	i := len(src) &^ 7
	if i > 0 {
		f32ToF16AVX2(dst[:i], src[:i])
	}
	f32ToF16Go(dst[i:], src[i:])
}

//go:noescape
func dequantQ8AVX2(dst []float32, src []byte, blocks int)

// dequantQ8AVX2Row is DequantRowQ8 in assembly (exact, as the Go twin).
func dequantQ8AVX2Row(dst []float32, src []byte) {
	if n := len(dst) / 32; n > 0 {
		dequantQ8AVX2(dst, src, n)
	}
}
