//go:build amd64 && gc && !purego

package kernels

//go:noescape
func vecDotAVX2(a, b []float32) float32

//go:noescape
func vecAxpyAVX2(y, x []float32, s float32)

//go:noescape
func dotRowsAVX2(out, q, k []float32, stride int, scale float32)

//go:noescape
func axpyRowsAVX2(y, p, v []float32, stride int)
