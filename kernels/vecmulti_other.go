//go:build !(amd64 || arm64) || !gc || purego

package kernels

func dotRowsMulti(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, _ []float32) {
	dotRowsMultiGo(out, ostride, q, qstride, m, width, k, kstride, n, scale)
}

func axpyRowsMulti(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, _ []float32) {
	axpyRowsMultiGo(y, ystride, m, width, p, pstride, n, v, vstride)
}
