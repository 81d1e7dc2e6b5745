//go:build arm64 && gc && !purego

package kernels

// dotLanes is the floats of a row one step of dot4Rows takes (two
// 4-lane accumulators, the summation order of vec_arm64.go).
const dotLanes = 8
