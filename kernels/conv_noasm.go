//go:build !amd64 || !gc || purego

package kernels

// convKernelFor returns the pure-Go convolution tile: no tier of this
// build has assembly tiles (arm64 NEON tiles are still to be written).
func convKernelFor(tier) *convKernel { return convGeneric }

// fmaPeakLoop: no assembly FMA loop in this build.
func fmaPeakLoop(tier, int) float64 { return 0 }

// snakeBetaSIMD: no assembly SnakeBeta in this build.
func snakeBetaSIMD(tier, []float32, []float32, []float32, []float32) int { return 0 }
