package kernels

import (
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
