//go:build arm64 && gc && !purego

package kernels

//go:noescape
func dot4RowsNEON(out []float32, ostride int, q []float32, qstride int, k []float32, kstride, pairs, steps int, scale float32, next []float32)

//go:noescape
func axpy4RowsNEON(y []float32, ystride int, p []float32, pstride, n int, v []float32, vstride, chunks int, next []float32)

// dotRowsMulti runs four queries and two keys at a time through
// dot4RowsNEON when width is a multiple of 8 (no scalar tail); an odd
// last key and the last m%4 queries go through dotRows.
func dotRowsMulti(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, next []float32) {
	j := 0
	if useVecNEON() && width%8 == 0 && width > 0 {
		for ; j+4 <= m; j += 4 {
			if n >= 2 {
				dot4RowsNEON(out[j*ostride:], ostride, q[j*qstride:], qstride, k, kstride, n/2, width/8, scale, next)
			}
			if n%2 == 1 {
				for jj := j; jj < j+4; jj++ {
					dotRows(out[jj*ostride+n-1:jj*ostride+n], q[jj*qstride:jj*qstride+width], k[(n-1)*kstride:], kstride, scale)
				}
			}
		}
	}
	for ; j < m; j++ {
		dotRows(out[j*ostride:j*ostride+n], q[j*qstride:j*qstride+width], k, kstride, scale)
	}
}

// axpyRowsMulti runs four rows at a time through axpy4RowsNEON (16
// floats at a time); the last width%16 columns and the last m%4 rows go
// through axpyRows.
func axpyRowsMulti(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, next []float32) {
	j := 0
	if useVecNEON() {
		c := width / 16
		for ; j+4 <= m; j += 4 {
			if c > 0 {
				axpy4RowsNEON(y[j*ystride:], ystride, p[j*pstride:], pstride, n, v, vstride, c, next)
			}
			if 16*c < width {
				for jj := j; jj < j+4; jj++ {
					axpyRows(y[jj*ystride+16*c:jj*ystride+width], p[jj*pstride:jj*pstride+n], v[16*c:], vstride)
				}
			}
		}
	}
	for ; j < m; j++ {
		axpyRows(y[j*ystride:j*ystride+width], p[j*pstride:j*pstride+n], v, vstride)
	}
}
