//go:build !(amd64 || arm64) || !gc || purego

package kernels

func vecDot(a, b []float32) float32 { return vecDotGo(a, b) }

func vecAxpy(y, x []float32, s float32) { vecAxpyGo(y, x, s) }

func dotRows(out, q, k []float32, stride int, scale float32) { dotRowsGo(out, q, k, stride, scale) }

func axpyRows(y, p, v []float32, stride int) { axpyRowsGo(y, p, v, stride) }
