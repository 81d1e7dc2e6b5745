//go:build arm64 && gc && !purego

package kernels

//go:noescape
func dot4RowsF16NEON(out []float32, ostride int, q []float32, qstride int, k []uint16, kstride, pairs, steps int, scale float32, next []uint16)

//go:noescape
func axpy4RowsF16NEON(y []float32, ystride int, p []float32, pstride, n int, v []uint16, vstride, chunks int, next []uint16)

//go:noescape
func f16ToF32NEON(dst []float32, src []uint16)

// f32ToF16 stays in Go: it runs once per cached key/value, not per read.
func f32ToF16(dst []uint16, src []float32) { f32ToF16Go(dst, src) }

// f16ToF32 widens 8 values at a time with FCVTL/FCVTL2 (exact), Go the
// rest.
func f16ToF32(dst []float32, src []uint16) {
	i := 0
	if useVecNEON() {
		if i = len(src) &^ 7; i > 0 {
			f16ToF32NEON(dst[:i], src[:i])
		}
	}
	f16ToF32Go(dst[i:], src[i:])
}

// dotRowsMultiF16 runs four queries and two keys at a time through
// dot4RowsF16NEON when width is a multiple of 8 (as dotRowsMulti does);
// an odd last key and the last m%4 queries take the float32 kernels on
// widened rows, which give the same bits.
func dotRowsMultiF16(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, next []uint16) {
	j := 0
	if useVecNEON() && width%8 == 0 && width > 0 && n >= 2 {
		for ; j+4 <= m; j += 4 {
			dot4RowsF16NEON(out[j*ostride:], ostride, q[j*qstride:], qstride, k, kstride, n/2, width/8, scale, next)
		}
		if j > 0 && n%2 == 1 {
			b := widenRows(k[(n-1)*kstride:], kstride, 1, 0, width)
			dotRowsMulti(out[n-1:], ostride, q, qstride, j, width, *b, width, 1, scale, *b)
			widenPool.Put(b)
		}
		if j == m {
			return
		}
	}
	b := widenRows(k, kstride, n, 0, width)
	dotRowsMulti(out[j*ostride:], ostride, q[j*qstride:], qstride, m-j, width, *b, width, n, scale, *b)
	widenPool.Put(b)
}

// axpyRowsMultiF16 runs four rows at a time through axpy4RowsF16NEON (16
// columns at a time); the last width%16 columns and the last m%4 rows
// take the float32 kernels on widened values, which give the same bits.
func axpyRowsMultiF16(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, next []uint16) {
	j := 0
	if useVecNEON() && width >= 16 {
		c := width / 16
		for ; j+4 <= m; j += 4 {
			axpy4RowsF16NEON(y[j*ystride:], ystride, p[j*pstride:], pstride, n, v, vstride, c, next)
		}
		if t := width - 16*c; j > 0 && t > 0 {
			b := widenRows(v, vstride, n, 16*c, t)
			axpyRowsMulti(y[16*c:], ystride, j, t, p, pstride, n, *b, t, *b)
			widenPool.Put(b)
		}
		if j == m {
			return
		}
	}
	b := widenRows(v, vstride, n, 0, width)
	axpyRowsMulti(y[j*ystride:], ystride, m-j, width, p[j*pstride:], pstride, n, *b, width, *b)
	widenPool.Put(b)
}
