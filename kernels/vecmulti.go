package kernels

// DotRowsMulti is DotRows for m query rows against the same n keys: for
// j < m and i < n, out[j*ostride+i] = VecDot(q_j, k_i) * scale with q_j
// = q[j*qstride:j*qstride+width] and k_i = k[i*kstride:i*kstride+width],
// each bit-identical to DotRows (or a loop of VecDot). The SIMD tier
// reads each key once for four queries (when width is a multiple of 16):
// the query heads that share a KV head, in attention.
func DotRowsMulti(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32) {
	DotRowsMultiNext(out, ostride, q, qstride, m, width, k, kstride, n, scale, nil)
}

// DotRowsMultiNext is DotRowsMulti that prefetches, as it reads the keys,
// the same rows of next (row i at next[i*kstride:], as many as the keys):
// the rows the caller reads after these, so that they stream from memory
// while these are computed. next does not change any result; nil
// prefetches nothing new. Only the address of next is used: a prefetch
// never faults, so its rows may run past its end.
func DotRowsMultiNext(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, next []float32) {
	checkRows("DotRowsMulti (queries)", m, width, len(q), qstride)
	checkRows("DotRowsMulti (outputs)", m, n, len(out), ostride)
	checkRows("DotRowsMulti (keys)", n, width, len(k), kstride)
	if m == 0 || n == 0 {
		return
	}
	if len(next) == 0 {
		next = k
	}
	dotRowsMulti(out, ostride, q, qstride, m, width, k, kstride, n, scale, next)
}

// AxpyRowsMulti is AxpyRows for m rows against the same n values: for
// j < m, AxpyRows(y[j*ystride:j*ystride+width], p[j*pstride:j*pstride+n],
// v, vstride), each bit-identical. The SIMD tier reads each value row
// once for four output rows.
func AxpyRowsMulti(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int) {
	AxpyRowsMultiNext(y, ystride, m, width, p, pstride, n, v, vstride, nil)
}

// AxpyRowsMultiNext is AxpyRowsMulti that prefetches, as it reads the
// values, the same rows of next (row i at next[i*vstride:]), as
// DotRowsMultiNext does; next does not change any result.
func AxpyRowsMultiNext(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, next []float32) {
	checkRows("AxpyRowsMulti (outputs)", m, width, len(y), ystride)
	checkRows("AxpyRowsMulti (weights)", m, n, len(p), pstride)
	checkRows("AxpyRowsMulti (values)", n, width, len(v), vstride)
	if m == 0 || n == 0 || width == 0 {
		return
	}
	if len(next) == 0 {
		next = v
	}
	axpyRowsMulti(y, ystride, m, width, p, pstride, n, v, vstride, next)
}

// dotRowsMultiGo is DotRowsMulti row by row with dotRowsGo.
func dotRowsMultiGo(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32) {
	for j := 0; j < m; j++ {
		dotRowsGo(out[j*ostride:j*ostride+n], q[j*qstride:j*qstride+width], k, kstride, scale)
	}
}

// axpyRowsMultiGo is AxpyRowsMulti row by row with axpyRowsGo.
func axpyRowsMultiGo(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int) {
	for j := 0; j < m; j++ {
		axpyRowsGo(y[j*ystride:j*ystride+width], p[j*pstride:j*pstride+n], v, vstride)
	}
}
