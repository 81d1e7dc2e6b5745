package kernels

import (
	"fmt"
	"slices"
	"sync"

	"github.com/siskin-ml/siskin/tensor"
)

// Attention over an f16 key/value cache: keys and values are IEEE half
// values (uint16), queries, scores and sums stay float32. Widening a half
// to float32 is exact, so each kernel here is defined as its float32 twin
// on the widened rows and is bit-identical to it in every tier: an f16
// cache changes only what is stored, never how it is summed.

// F32ToF16 rounds src to IEEE half values in dst (round to nearest even,
// as tensor.Float32ToFP16; overflow gives infinity). Only a NaN's payload
// may differ between tiers.
func F32ToF16(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic("kernels: F32ToF16 of slices of different lengths")
	}
	f32ToF16(dst, src)
}

// F16ToF32 widens IEEE half values (exact).
func F16ToF32(dst []float32, src []uint16) {
	if len(dst) != len(src) {
		panic("kernels: F16ToF32 of slices of different lengths")
	}
	f16ToF32(dst, src)
}

func f32ToF16Go(dst []uint16, src []float32) {
	for i, x := range src {
		dst[i] = tensor.Float32ToFP16(x)
	}
}

func f16ToF32Go(dst []float32, src []uint16) {
	for i, h := range src {
		dst[i] = tensor.FP16ToFloat32(h)
	}
}

// DotRowsMultiF16 is DotRowsMulti with keys stored as halves (kstride
// halves apart): bit-identical to DotRowsMulti on the widened keys.
func DotRowsMultiF16(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32) {
	DotRowsMultiNextF16(out, ostride, q, qstride, m, width, k, kstride, n, scale, nil)
}

// DotRowsMultiNextF16 is DotRowsMultiNext with keys (and the prefetched
// rows next) stored as halves.
func DotRowsMultiNextF16(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32, next []uint16) {
	checkRows("DotRowsMultiF16 (queries)", m, width, len(q), qstride)
	checkRows("DotRowsMultiF16 (outputs)", m, n, len(out), ostride)
	checkRows("DotRowsMultiF16 (keys)", n, width, len(k), kstride)
	if m == 0 || n == 0 {
		return
	}
	if len(next) == 0 {
		next = k
	}
	dotRowsMultiF16(out, ostride, q, qstride, m, width, k, kstride, n, scale, next)
}

// AxpyRowsMultiF16 is AxpyRowsMulti with values stored as halves
// (vstride halves apart): bit-identical to AxpyRowsMulti on the widened
// values.
func AxpyRowsMultiF16(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int) {
	AxpyRowsMultiNextF16(y, ystride, m, width, p, pstride, n, v, vstride, nil)
}

// AxpyRowsMultiNextF16 is AxpyRowsMultiNext with values (and next) stored
// as halves.
func AxpyRowsMultiNextF16(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int, next []uint16) {
	checkRows("AxpyRowsMultiF16 (outputs)", m, width, len(y), ystride)
	checkRows("AxpyRowsMultiF16 (weights)", m, n, len(p), pstride)
	checkRows("AxpyRowsMultiF16 (values)", n, width, len(v), vstride)
	if m == 0 || n == 0 || width == 0 {
		return
	}
	if len(next) == 0 {
		next = v
	}
	axpyRowsMultiF16(y, ystride, m, width, p, pstride, n, v, vstride, next)
}

// widenPool holds the float32 copies of rows that a kernel without an f16
// form reads.
var widenPool = sync.Pool{New: func() any { return new([]float32) }}

// widenRows widens columns [c0, c0+width) of n rows of halves, stride
// apart, into a pooled buffer of n rows of width floats (return it to
// widenPool).
func widenRows(src []uint16, stride, n, c0, width int) *[]float32 {
	b := widenPool.Get().(*[]float32)
	if cap(*b) < n*width {
		*b = make([]float32, n*width)
	}
	w := (*b)[:n*width]
	for i := 0; i < n; i++ {
		f16ToF32(w[i*width:(i+1)*width], src[i*stride+c0:i*stride+c0+width])
	}
	*b = w
	return b
}

// dotRowsMultiF16Go is the generic twin: the keys widened, then
// dotRowsMultiGo.
func dotRowsMultiF16Go(out []float32, ostride int, q []float32, qstride, m, width int, k []uint16, kstride, n int, scale float32) {
	b := widenRows(k, kstride, n, 0, width)
	dotRowsMultiGo(out, ostride, q, qstride, m, width, *b, width, n, scale)
	widenPool.Put(b)
}

// axpyRowsMultiF16Go is the generic twin: the values widened, then
// axpyRowsMultiGo.
func axpyRowsMultiF16Go(y []float32, ystride, m, width int, p []float32, pstride, n int, v []uint16, vstride int) {
	b := widenRows(v, vstride, n, 0, width)
	axpyRowsMultiGo(y, ystride, m, width, p, pstride, n, *b, width)
	widenPool.Put(b)
}

// F16AttendRows is how many keys and values of an f16 cache a tile of
// several query rows should pass to one call of DotRowsMultiNextF16 and
// AxpyRowsMultiNextF16, for heads of width elements, given the caller's
// choice for float32 rows (keys, values). The AVX-512 kernels read a head
// of up to 128 columns in one pass over each row, so they take 4x the
// keys and 2x the values: fewer, longer calls. On the Zen 5 EPYC, pp512
// of the Qwen3-1.7B shape, three alternated pairs: Q4_0 1.02-1.04x,
// Q4_K_M 0.98-1.04x; attention went from 16% to 13% of the Q4_0
// profile. The other tiers keep (keys, values), the sizes measured for
// their kernels.
func F16AttendRows(keys, values, width int) (int, int) {
	if vk().wideF16Attend && width <= 128 {
		return 4 * keys, 2 * values
	}
	return keys, values
}

// HeadsF16 reports whether the tier in use has the f16 kernels over
// several KV heads at once (DotRowsHeadsF16, AxpyRowsHeadsF16).
func HeadsF16() bool { return vk().dotRowsHeadsF16 != nil }

// DotRowsHeadsF16 is DotRowsMultiNextF16 for heads KV heads of the same
// key rows: head g's m query rows start at g*hq of q, its keys hk
// elements into each row of k, its scores hout floats on in out. The
// bits are a call per head's. A tier with HeadsF16 takes each row of
// keys once for every head, so decode over a deep cache reads it in
// order of address; elsewhere it is a call per head.
func DotRowsHeadsF16(out []float32, ostride, hout int, q []float32, qstride, hq, m, width int, k []uint16, kstride, hk, n, heads int, scale float32) {
	checkHeads("DotRowsHeadsF16", heads, 0, hout, hq, hk)
	for _, g := range []int{heads - 1, 0} { // the last head bounds every head
		if g < 0 {
			return
		}
		checkRows("DotRowsHeadsF16 (queries)", m, width, len(q)-min(len(q), g*hq), qstride)
		checkRows("DotRowsHeadsF16 (outputs)", m, n, len(out)-min(len(out), g*hout), ostride)
		checkRows("DotRowsHeadsF16 (keys)", n, width, len(k)-min(len(k), g*hk), kstride)
	}
	if m == 0 || n == 0 {
		return
	}
	if f := vk().dotRowsHeadsF16; f != nil && f(out, ostride, hout, q, qstride, hq, m, width, k, kstride, hk, n, heads, scale) {
		return
	}
	for g := range heads {
		DotRowsMultiNextF16(out[g*hout:], ostride, q[g*hq:], qstride, m, width, k[g*hk:], kstride, n, scale, nil)
	}
}

// PairedF16 reports whether the tier in use has a kernel for
// DotRowsPairedF16 on rows of width elements; without one that call
// copies the queries back first.
func PairedF16(width int) bool {
	return vk().dotRowsPairedF16 != nil && width > 0 && width%16 == 0
}

// PairQueries writes each group of eight floats of src twice into dst
// (len(dst) = 2*len(src), len(src) a multiple of 8): the queries'
// layout DotRowsPairedF16 reads, each group filling both halves of a
// 16-lane register with one plain load.
func PairQueries(dst, src []float32) {
	if len(src)%8 != 0 || len(dst) != 2*len(src) {
		panic(fmt.Sprintf("kernels: PairQueries of %d floats into %d", len(src), len(dst)))
	}
	// Whole-array assignments, not copy: 32-byte copies through memmove
	// were 1.3% of a Q4_K_M prefill profile.
	for i := 0; i < len(src); i += 8 {
		g := *(*[8]float32)(src[i:])
		*(*[8]float32)(dst[2*i:]) = g
		*(*[8]float32)(dst[2*i+8:]) = g
	}
}

// DotRowsPairedF16 is DotRowsMultiNextF16 for four query rows of each of
// two query heads that score the same keys (two heads of a KV head's
// group): head 0's rows at qx[j*qxstride:], head 1's at
// qx[qxhead+j*qxstride:], each 2*width floats in PairQueries' layout;
// their scores go to out[j*ostride:] and out[ohead+j*ostride:]. The
// bits are DotRowsMultiNextF16's on the rows before pairing. A tier with
// PairedF16 loads and widens each key once for the eight rows.
func DotRowsPairedF16(out []float32, ostride, ohead int, qx []float32, qxstride, qxhead, width int, k []uint16, kstride, n int, scale float32, next []uint16) {
	checkHeads("DotRowsPairedF16", 2, 0, ohead, qxhead)
	for _, e := range []int{0, 1} {
		checkRows("DotRowsPairedF16 (queries)", 4, 2*width, len(qx)-min(len(qx), e*qxhead), qxstride)
		checkRows("DotRowsPairedF16 (outputs)", 4, n, len(out)-min(len(out), e*ohead), ostride)
	}
	checkRows("DotRowsPairedF16 (keys)", n, width, len(k), kstride)
	if width%8 != 0 {
		panic(fmt.Sprintf("kernels: DotRowsPairedF16 of width %d (not a multiple of 8)", width))
	}
	if n == 0 {
		return
	}
	if len(next) == 0 {
		next = k
	}
	if f := vk().dotRowsPairedF16; f != nil && f(out, ostride, ohead, qx, qxstride, qxhead, width, k, kstride, n, scale, next) {
		return
	}
	b := widenPool.Get().(*[]float32)
	q := slices.Grow((*b)[:0], 4*width)[:4*width]
	for _, e := range []int{0, 1} {
		for j := range 4 {
			row := qx[e*qxhead+j*qxstride:]
			for i := 0; i < width; i += 8 {
				copy(q[j*width+i:j*width+i+8], row[2*i:2*i+8])
			}
		}
		DotRowsMultiNextF16(out[e*ohead:], ostride, q, width, 4, width, k, kstride, n, scale, next)
	}
	*b = q
	widenPool.Put(b)
}

// AxpyRowsHeadsF16 is AxpyRowsMultiNextF16 for heads KV heads of the same
// value rows: head g's m output rows start at g*hy of y, its weights at
// g*hp of p, its values hv elements into each row of v. The bits are a
// call per head's; a tier with HeadsF16 reads each row of values once
// for every head.
func AxpyRowsHeadsF16(y []float32, ystride, hy, m, width int, p []float32, pstride, hp, n int, v []uint16, vstride, hv, heads int) {
	checkHeads("AxpyRowsHeadsF16", heads, 0, hy, hp, hv)
	for _, g := range []int{heads - 1, 0} {
		if g < 0 {
			return
		}
		checkRows("AxpyRowsHeadsF16 (outputs)", m, width, len(y)-min(len(y), g*hy), ystride)
		checkRows("AxpyRowsHeadsF16 (weights)", m, n, len(p)-min(len(p), g*hp), pstride)
		checkRows("AxpyRowsHeadsF16 (values)", n, width, len(v)-min(len(v), g*hv), vstride)
	}
	if m == 0 || n == 0 || width == 0 {
		return
	}
	if f := vk().axpyRowsHeadsF16; f != nil && f(y, ystride, hy, m, width, p, pstride, hp, n, v, vstride, hv, heads) {
		return
	}
	for g := range heads {
		AxpyRowsMultiNextF16(y[g*hy:], ystride, m, width, p[g*hp:], pstride, n, v[g*hv:], vstride, nil)
	}
}
