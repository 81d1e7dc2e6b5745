//go:build (amd64 || arm64) && gc && !purego

package kernels

import "sync"

// The attention kernels' SIMD tiers (AVX2 in vecmulti{,16}_amd64.s, NEON
// in vecmulti{,16}_arm64.s) share these wrappers (the entries of their
// vector tables, simdVecKernels): the assembly has the
// same names and arguments on both, and differs only in how many floats
// of a row one step of dot4Rows takes (dotLanes, per architecture).

// dot4Rows sets out[j*ostride+i], j < 4 and i < 2*pairs, to the dot
// product of query j (qstride floats apart) and key i (kstride apart)
// times scale, over steps*dotLanes floats, prefetching the rows of next.
//
//go:noescape
func dot4Rows(out []float32, ostride int, q []float32, qstride int, k []float32, kstride, pairs, steps int, scale float32, next []float32)

// axpy4Rows adds to 16*chunks columns of four output rows (ystride
// apart) the n value rows (vstride apart) weighted by p (pstride apart).
//
//go:noescape
func axpy4Rows(y []float32, ystride int, p []float32, pstride, n int, v []float32, vstride, chunks int, next []float32)

// dot4RowsF16 and axpy4RowsF16 are dot4Rows and axpy4Rows with the keys
// or values (and next) as halves.
//
//go:noescape
func dot4RowsF16(out []float32, ostride int, q []float32, qstride int, k []uint16, kstride, pairs, steps int, scale float32, next []uint16)

//go:noescape
func axpy4RowsF16(y []float32, ystride int, p []float32, pstride, n int, v []uint16, vstride, chunks int, next []uint16)

// f16ToF32SIMD widens len(src) halves, a multiple of 8 (exact).
//
//go:noescape
func f16ToF32SIMD(dst []float32, src []uint16)

// dotRowsMultiSIMD runs four queries at a time through dot4Rows (pairs of
// keys; an odd last key and the last m%4 queries through dotRows), when
// width is a multiple of dotLanes so that the single-row dot has no
// scalar tail either.
func dotRowsMultiSIMD(out []float32, ostride int, q []float32, qstride, m, width int, k []float32, kstride, n int, scale float32, next []float32) {
	j := 0
	if width%dotLanes == 0 && width > 0 {
		for ; j+4 <= m; j += 4 {
			if n >= 2 {
				dot4Rows(out[j*ostride:], ostride, q[j*qstride:], qstride, k, kstride, n/2, width/dotLanes, scale, next)
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

// axpyRowsMultiSIMD runs four rows at a time through axpy4Rows (16 floats at
// a time; the last width%16 and the last m%4 rows through axpyRows).
func axpyRowsMultiSIMD(y []float32, ystride, m, width int, p []float32, pstride, n int, v []float32, vstride int, next []float32) {
	j := 0
	{
		c := width / 16
		for ; j+4 <= m; j += 4 {
			if c > 0 {
				axpy4Rows(y[j*ystride:], ystride, p[j*pstride:], pstride, n, v, vstride, c, next)
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

// f16ToF32Rows widens 8 values at a time in assembly, Go the rest.
func f16ToF32Rows(dst []float32, src []uint16) {
	i := len(src) &^ 7
	if i > 0 {
		f16ToF32SIMD(dst[:i], src[:i])
	}
	f16ToF32Go(dst[i:], src[i:])
}

// dotRowsMultiF16SIMD runs four queries and two keys at a time through
// dot4RowsF16 when width is a multiple of dotLanes (as dotRowsMulti
// does); an odd last key and the last m%4 queries take the float32
// kernels on widened rows, which give the same bits.
func dotRowsMultiF16SIMD(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, next []uint16) {
	j := 0
	if width%dotLanes == 0 && width > 0 && n >= 2 {
		for ; j+4 <= m; j += 4 {
			dot4RowsF16(out[j*ostride:], ostride, q[j*qstride:], qstride, k, kstride, n/2, width/dotLanes, scale, next)
		}
		if j > 0 && n%2 == 1 {
			b := widenRows(k[(n-1)*kstride:], kstride, 1, 0, width)
			dotRowsMulti(out[n-1:], ostride, q, qstride, j, width, *b, width, 1, scale, *b)
			widenPool.Put(b)
		}
		if j == m {
			return
		}
		if width <= padWidth && n <= padWidth {
			dotRowsPaddedF16(out[j*ostride:], ostride, q[j*qstride:], qstride, m-j, width, k, kstride, n, scale, next)
			return
		}
	}
	b := widenRows(k, kstride, n, 0, width)
	dotRowsMulti(out[j*ostride:], ostride, q[j*qstride:], qstride, m-j, width, *b, width, n, scale, *b)
	widenPool.Put(b)
}

// axpyRowsMultiF16SIMD runs four rows at a time through axpy4RowsF16 (16
// columns at a time); the last width%16 columns and the last m%4 rows
// take the float32 kernels on widened values, which give the same bits.
func axpyRowsMultiF16SIMD(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, next []uint16) {
	j := 0
	if width >= 16 {
		c := width / 16
		for ; j+4 <= m; j += 4 {
			axpy4RowsF16(y[j*ystride:], ystride, p[j*pstride:], pstride, n, v, vstride, c, next)
		}
		if t := width - 16*c; j > 0 && t > 0 {
			b := widenRows(v, vstride, n, 16*c, t)
			axpyRowsMulti(y[16*c:], ystride, j, t, p, pstride, n, *b, t, *b)
			widenPool.Put(b)
		}
		if j == m {
			return
		}
		if width <= padWidth && n <= padWidth {
			axpyRowsPaddedF16(y[j*ystride:], ystride, m-j, width, p[j*pstride:], pstride, n, v, vstride, next)
			return
		}
	}
	b := widenRows(v, vstride, n, 0, width)
	axpyRowsMulti(y[j*ystride:], ystride, m-j, width, p[j*pstride:], pstride, n, *b, width, *b)
	widenPool.Put(b)
}

// Fewer than four rows (decoding: a KV head's group of query heads) run
// through the four-row f16 kernels from a copy padded to four rows, so
// the halves are read in place rather than widened into a float32 copy
// first (which cost more than the products at long contexts). The rows
// past m hold whatever the scratch held; their results are dropped, and
// each row's results depend on that row alone, so the bits are those of
// the float32 kernels on widened rows.
const padWidth = 256

type pad4 struct{ a, b [4 * padWidth]float32 }

var pad4Pool = sync.Pool{New: func() any { return new(pad4) }}

// dotRowsPaddedF16 is dotRowsMultiF16SIMD for m < 4 rows, width <= padWidth
// (a multiple of dotLanes) and 2 <= n <= padWidth keys.
func dotRowsPaddedF16(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, next []uint16) {
	s := pad4Pool.Get().(*pad4)
	for r := 0; r < m; r++ {
		copy(s.a[r*width:(r+1)*width], q[r*qstride:r*qstride+width])
	}
	dot4RowsF16(s.b[:], n, s.a[:], width, k, kstride, n/2, width/dotLanes, scale, next)
	if n%2 == 1 {
		b := widenRows(k[(n-1)*kstride:], kstride, 1, 0, width)
		dotRowsMulti(s.b[n-1:], n, s.a[:], width, m, width, *b, width, 1, scale, *b)
		widenPool.Put(b)
	}
	for r := 0; r < m; r++ {
		copy(out[r*ostride:r*ostride+n], s.b[r*n:(r+1)*n])
	}
	pad4Pool.Put(s)
}

// axpyRowsPaddedF16 is axpyRowsMultiF16SIMD for m < 4 rows, 16 <= width
// <= padWidth and n <= padWidth value rows.
func axpyRowsPaddedF16(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, next []uint16) {
	s := pad4Pool.Get().(*pad4)
	for r := 0; r < m; r++ {
		copy(s.a[r*width:(r+1)*width], y[r*ystride:r*ystride+width])
		copy(s.b[r*n:(r+1)*n], p[r*pstride:r*pstride+n])
	}
	c := width / 16
	axpy4RowsF16(s.a[:], width, s.b[:], n, n, v, vstride, c, next)
	if t := width - 16*c; t > 0 {
		b := widenRows(v, vstride, n, 16*c, t)
		axpyRowsMulti(s.a[16*c:], width, m, t, s.b[:], n, n, *b, t, *b)
		widenPool.Put(b)
	}
	for r := 0; r < m; r++ {
		copy(y[r*ystride:r*ystride+width], s.a[r*width:(r+1)*width])
	}
	pad4Pool.Put(s)
}

// simdVecKernels sets the attention entries of v that both architectures'
// SIMD tiers share.
func simdVecKernels(v *vecKernels) *vecKernels {
	v.dotRowsMulti, v.axpyRowsMulti = dotRowsMultiSIMD, axpyRowsMultiSIMD
	v.dotRowsMultiF16, v.axpyRowsMultiF16 = dotRowsMultiF16SIMD, axpyRowsMultiF16SIMD
	v.f16ToF32 = f16ToF32Rows
	return v
}
