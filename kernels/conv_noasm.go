//go:build !(amd64 || arm64) || !gc || purego

package kernels

// convKernelFor returns the pure-Go convolution tile: no tier of this
// build has assembly tiles (amd64 and arm64 have theirs).
func convKernelFor(tier) *convKernel { return convGeneric }

// fmaPeakLoop: no assembly FMA loop in this build.
func fmaPeakLoop(tier, int) float64 { return 0 }

// snakeBetaSIMD: no assembly SnakeBeta in this build.
func snakeBetaSIMD(tier, []float32, []float32, []float32, []float32) int { return 0 }
