//go:build amd64 && gc && !purego

package kernels

// dotLanes is the floats of a row one step of dot4Rows takes (two YMM
// registers).
const dotLanes = 16

// useVecSIMD: the AVX2 tier requires F16C (dispatch_amd64.go), so it
// covers the conversions too.
func useVecSIMD() bool { return useVecAVX2() }

//go:noescape
func f32ToF16AVX2(dst []uint16, src []float32)

// f32ToF16 rounds 8 values at a time in assembly, Go the rest.
func f32ToF16(dst []uint16, src []float32) {
	i := 0
	if useVecAVX2() {
		if i = len(src) &^ 7; i > 0 {
			f32ToF16AVX2(dst[:i], src[:i])
		}
	}
	f32ToF16Go(dst[i:], src[i:])
}
