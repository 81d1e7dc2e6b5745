//go:build arm64 && gc && !purego

package kernels

// dotLanes is the floats of a row one step of dot4Rows takes (two
// 4-lane accumulators, the summation order of vec_arm64.go).
const dotLanes = 8

func useVecSIMD() bool { return useVecNEON() }

// f32ToF16 stays in Go: it runs once per cached key/value, not per read.
func f32ToF16(dst []uint16, src []float32) { f32ToF16Go(dst, src) }
