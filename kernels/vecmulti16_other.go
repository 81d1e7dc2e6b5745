//go:build !(amd64 || arm64) || !gc || purego

package kernels

func f32ToF16(dst []uint16, src []float32) { f32ToF16Go(dst, src) }

func f16ToF32(dst []float32, src []uint16) { f16ToF32Go(dst, src) }

func dotRowsMultiF16(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, _ []uint16) {
	dotRowsMultiF16Go(out, ostride, q, qstride, m, width, k, kstride, n, scale)
}

func axpyRowsMultiF16(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, _ []uint16) {
	axpyRowsMultiF16Go(y, ystride, m, width, p, pstride, n, v, vstride)
}
