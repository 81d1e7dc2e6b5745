//go:build !amd64 || !gc || purego

package kernels

func vecDot(a, b []float32) float32 { return vecDotGo(a, b) }

func vecAxpy(y, x []float32, s float32) { vecAxpyGo(y, x, s) }
