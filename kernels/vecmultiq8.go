package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/siskin-ml/siskin/tensor"
)

// Attention over a q8_0 key/value cache: a row of width elements (a
// multiple of 32) is stored as width/32 blocks of 34 bytes, an fp16
// scale d then 32 int8 q, as GGUF's Q8_0 (and llama.cpp's -ctk/-ctv q8_0
// cache). The value of an element is q*d, a product of 8 and 11
// significant bits and so exact in float32: each kernel here is defined
// as its float32 twin on the dequantized rows, in every tier, as the f16
// ones are on widened halves.

// Q8RowBytes is the bytes of a q8_0 row of width elements.
func Q8RowBytes(width int) int { return width / 32 * q8_0Bytes }

// QuantizeRowQ8 stores src (a multiple of 32 values) as q8_0 blocks in
// dst (Q8RowBytes(len(src)) bytes): d = amax/127 rounded to fp16, q =
// round(x/d) with the unrounded d, as ggml's quantize_row_q8_0_ref.
func QuantizeRowQ8(dst []byte, src []float32) {
	if len(src)%32 != 0 || len(dst) != Q8RowBytes(len(src)) {
		panic(fmt.Sprintf("kernels: QuantizeRowQ8 of %d values into %d bytes", len(src), len(dst)))
	}
	vk().quantQ8(dst, src)
}

// quantQ8Go is QuantizeRowQ8's generic twin.
func quantQ8Go(dst []byte, src []float32) {
	for b := 0; b < len(src)/32; b++ {
		quantQ8_0((*[q8_0Bytes]byte)(dst[b*q8_0Bytes:]), (*[32]float32)(src[b*32:]))
	}
}

// DequantRowQ8 widens q8_0 blocks into dst (32 values per block, exact).
func DequantRowQ8(dst []float32, src []byte) {
	if len(dst)%32 != 0 || len(src) != Q8RowBytes(len(dst)) {
		panic(fmt.Sprintf("kernels: DequantRowQ8 of %d bytes into %d values", len(src), len(dst)))
	}
	vk().dequantQ8(dst, src)
}

// dequantQ8Go is DequantRowQ8's generic twin.
func dequantQ8Go(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*q8_0Bytes : (b+1)*q8_0Bytes]
		d := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
		y := dst[b*32 : b*32+32]
		for j := range y {
			y[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// checkQ8Rows panics unless n q8_0 rows of width elements, stride bytes
// apart, fit in have bytes.
func checkQ8Rows(what string, n, width, have, stride int) {
	if width%32 != 0 {
		panic(fmt.Sprintf("kernels: %s of width %d, not a multiple of 32", what, width))
	}
	checkRows(what, n, Q8RowBytes(width), have, stride)
}

// checkDotRowsQ8 panics unless the queries, outputs and q8_0 keys of a
// DotRowsMultiQ8 call fit their shapes; it reports whether there is work.
func checkDotRowsQ8(out []float32, ostride int, q []float32, qstride, m, width int, k []byte, kstride, n int) bool {
	checkRows("DotRowsMultiQ8 (queries)", m, width, len(q), qstride)
	checkRows("DotRowsMultiQ8 (outputs)", m, n, len(out), ostride)
	checkQ8Rows("DotRowsMultiQ8 (keys)", n, width, len(k), kstride)
	return m > 0 && n > 0 && width > 0
}

// DotRowsMultiNextQ8 is DotRowsMultiNext with keys (and the prefetched
// rows next) stored as q8_0 rows kstride bytes apart: bit-identical to
// DotRowsMulti on the dequantized keys, except on a tier whose
// Q8DotQuantizesQuery (there a row's scores still do not depend on the
// other rows or keys computed with it). width is a multiple of 32.
func DotRowsMultiNextQ8(out []float32, ostride int, q []float32, qstride, m, width int, k []byte, kstride, n int, scale float32, next []byte) {
	if !checkDotRowsQ8(out, ostride, q, qstride, m, width, k, kstride, n) {
		return
	}
	if len(next) == 0 {
		next = k
	}
	vk().dotRowsMultiQ8(out, ostride, q, qstride, m, width, k, kstride, n, scale, next)
}

// AxpyRowsMultiNextQ8 is AxpyRowsMultiNext with values (and next) stored
// as q8_0 rows vstride bytes apart: bit-identical to AxpyRowsMulti on the
// dequantized values. width is a multiple of 32.
func AxpyRowsMultiNextQ8(y []float32, ystride, m, width int, p []float32, pstride, n int, v []byte, vstride int, next []byte) {
	checkRows("AxpyRowsMultiQ8 (outputs)", m, width, len(y), ystride)
	checkRows("AxpyRowsMultiQ8 (weights)", m, n, len(p), pstride)
	checkQ8Rows("AxpyRowsMultiQ8 (values)", n, width, len(v), vstride)
	if m == 0 || n == 0 || width == 0 {
		return
	}
	if len(next) == 0 {
		next = v
	}
	vk().axpyRowsMultiQ8(y, ystride, m, width, p, pstride, n, v, vstride, next)
}

// dequantRows widens n q8_0 rows of width elements, stride bytes apart,
// into a pooled buffer of n rows of width floats (return it to
// widenPool).
func dequantRows(src []byte, stride, n, width int) *[]float32 {
	b := widenPool.Get().(*[]float32)
	if cap(*b) < n*width {
		*b = make([]float32, n*width)
	}
	w := (*b)[:n*width]
	for i := 0; i < n; i++ {
		vk().dequantQ8(w[i*width:(i+1)*width], src[i*stride:i*stride+Q8RowBytes(width)])
	}
	*b = w
	return b
}

// dotRowsMultiQ8Go is the generic twin: the keys dequantized, then
// dotRowsMultiGo.
func dotRowsMultiQ8Go(out []float32, ostride int, q []float32, qstride, m, width int, k []byte, kstride, n int, scale float32) {
	b := dequantRows(k, kstride, n, width)
	dotRowsMultiGo(out, ostride, q, qstride, m, width, *b, width, n, scale)
	widenPool.Put(b)
}

// axpyRowsMultiQ8Go is the generic twin: the values dequantized, then
// axpyRowsMultiGo.
func axpyRowsMultiQ8Go(y []float32, ystride, m, width int, p []float32, pstride, n int, v []byte, vstride int) {
	b := dequantRows(v, vstride, n, width)
	axpyRowsMultiGo(y, ystride, m, width, p, pstride, n, *b, width)
	widenPool.Put(b)
}

// dotRowsMultiQ8Widen is the q8_0 dot of the tiers without a q8_0 kernel
// (AVX2, NEON): the keys dequantized, then the tier's float32 kernel.
func dotRowsMultiQ8Widen(out []float32, ostride int, q []float32, qstride, m, width int, k []byte, kstride, n int, scale float32, _ []byte) {
	b := dequantRows(k, kstride, n, width)
	dotRowsMulti(out, ostride, q, qstride, m, width, *b, width, n, scale, *b)
	widenPool.Put(b)
}

// axpyRowsMultiQ8Widen is axpy's counterpart of dotRowsMultiQ8Widen.
func axpyRowsMultiQ8Widen(y []float32, ystride, m, width int, p []float32, pstride, n int, v []byte, vstride int, _ []byte) {
	b := dequantRows(v, vstride, n, width)
	axpyRowsMulti(y, ystride, m, width, p, pstride, n, *b, width, *b)
	widenPool.Put(b)
}

// Q8DotQuantizesQuery reports whether the tier in use computes
// DotRowsMultiNextQ8 as int8 dots with each query row quantized to q8_0
// (QuantizeRowQ8; AVX-512) rather than as float32 dots on the dequantized
// keys: its scores are then the exact dots of the dequantized query and
// keys up to float32 rounding.
func Q8DotQuantizesQuery() bool { return vk().q8QueryInt8 }

// q8QueryBytes is the bytes of one 32-element block of a query row as
// quantQueryQ8 lays it out for the AVX-512 int8 dot kernels: the block's
// 32 int8 twice (both halves of a ZMM register, which holds a block of two
// keys), -128*sum(q) in int32 lanes 0 and 8 of the next 64 bytes (zeros
// elsewhere: it cancels the +128 that makes the keys unsigned for
// VPDPBUSD), the block's scale as a float32, then 4 bytes of padding.
const q8QueryBytes = 136

// queryPool holds quantQueryQ8's buffers.
var queryPool = sync.Pool{New: func() any { return new([]byte) }}

// quantQueryQ8 quantizes m query rows of width elements (qstride apart)
// to q8_0 as QuantizeRowQ8 does (d = amax/127 rounded to fp16), laid out
// as q8QueryBytes per block, width/32 blocks per row, rows contiguous.
// Return the buffer to queryPool.
func quantQueryQ8(q []float32, qstride, m, width int) *[]byte {
	b := queryPool.Get().(*[]byte)
	*b = quantQueryQ8To(*b, q, qstride, m, width)
	return b
}

// quantQueryQ8To is quantQueryQ8 into dst (grown if short). A long row
// (a prompt's queries, which Q8Query.Prepare passes as one) is split
// across threads at multiples of the quantizer's eight blocks: every
// block is quantized alone, so the bytes do not depend on the split.
func quantQueryQ8To(dst []byte, q []float32, qstride, m, width int) []byte {
	steps := width / 32
	if cap(dst) < m*steps*q8QueryBytes {
		dst = make([]byte, m*steps*q8QueryBytes)
	}
	dst = dst[:m*steps*q8QueryBytes]
	for j := 0; j < m; j++ {
		row, src := dst[j*steps*q8QueryBytes:][:steps*q8QueryBytes], q[j*qstride:][:32*steps]
		if !Parallel(steps * queryBlockWork) {
			quantQueryBlocks(row, src)
			continue
		}
		groups := (steps + queryGroup - 1) / queryGroup
		ParallelFor(groups, queryGroup*queryBlockWork, 1, func(lo, hi int) {
			s0, s1 := lo*queryGroup, min(hi*queryGroup, steps)
			quantQueryBlocks(row[s0*q8QueryBytes:s1*q8QueryBytes], src[32*s0:32*s1])
		})
	}
	return dst
}

// queryGroup is the blocks quantQueryBlocks quantizes at a time, and
// queryBlockWork a block's cost in ParallelFor's multiply-adds (about
// 30 ns a block on one Zen 5 thread).
const (
	queryGroup     = 8
	queryBlockWork = 1024
)

// sumInt8x32 is the sum of 32 int8, eight at a time in a uint64: each
// byte biased by 128 to 0-255, adjacent bytes added into 16-bit lanes,
// the four words' lanes summed (at most 2040 each), then the lanes.
func sumInt8x32(b []byte) int32 {
	const bias, lo = 0x8080808080808080, 0x00ff00ff00ff00ff
	var acc uint64
	for i := 0; i < 32; i += 8 {
		u := binary.LittleEndian.Uint64(b[i:]) ^ bias
		acc += u&lo + u>>8&lo
	}
	return int32(acc*0x0001000100010001>>48) - 128*32
}

// quantQueryBlocks lays out the 32-element blocks of q in dst as
// quantQueryQ8 does.
func quantQueryBlocks(dst []byte, q []float32) {
	steps := len(q) / 32
	var blks [queryGroup * q8_0Bytes]byte
	quant := vk().quantQ8
	for s := 0; s < steps; s += queryGroup {
		n := min(queryGroup, steps-s)
		quant(blks[:n*q8_0Bytes], q[32*s:][:32*n])
		for i := range n {
			blk := blks[i*q8_0Bytes:][:q8_0Bytes]
			r := dst[(s+i)*q8QueryBytes:][:q8QueryBytes]
			copy(r[0:32], blk[2:])
			copy(r[32:64], blk[2:])
			sum := sumInt8x32(blk[2:])
			clear(r[64:128])
			binary.LittleEndian.PutUint32(r[64:], uint32(-128*sum))
			binary.LittleEndian.PutUint32(r[96:], uint32(-128*sum))
			d := tensor.FP16ToFloat32(binary.LittleEndian.Uint16(blk[:]))
			binary.LittleEndian.PutUint32(r[128:], math.Float32bits(d))
			clear(r[132:])
		}
	}
}

// Q8Query is query rows prepared once for several DotRowsMultiNextQ8Query
// calls: on a tier whose Q8DotQuantizesQuery, every 32-block quantized to
// q8_0 (as QuantizeRowQ8) and laid out for its kernels; elsewhere nothing
// (the calls read the float32 rows). Reuse one across steps: Prepare
// keeps its buffer.
type Q8Query struct {
	b []byte
}

// Prepare quantizes q (a multiple of 32 floats, flat: the rows and heads
// a caller's DotRowsMultiNextQ8Query calls will name by offset) where the
// tier in use needs it.
func (x *Q8Query) Prepare(q []float32) {
	if len(q)%32 != 0 {
		panic(fmt.Sprintf("kernels: Q8Query of %d values, not a multiple of 32", len(q)))
	}
	x.b = x.b[:0]
	if vk().q8QueryInt8 {
		x.b = quantQueryQ8To(x.b, q, len(q), 1, len(q))
	}
}

// DotRowsMultiNextQ8Query is DotRowsMultiNextQ8 (same bits) with the
// query rows q = all[off:] for an all that x was prepared from, so a tier
// that quantizes the query does it once per step rather than per call.
// off and qstride are multiples of 32.
func DotRowsMultiNextQ8Query(out []float32, ostride int, all []float32, x *Q8Query, off, qstride, m, width int, k []byte, kstride, n int, scale float32, next []byte) {
	q := all[off:]
	if !vk().q8QueryInt8 || vk().dotRowsMultiQ8Pre == nil {
		DotRowsMultiNextQ8(out, ostride, q, qstride, m, width, k, kstride, n, scale, next)
		return
	}
	if off%32 != 0 || qstride%32 != 0 || len(x.b) != len(all)/32*q8QueryBytes {
		panic(fmt.Sprintf("kernels: DotRowsMultiNextQ8Query at %d, stride %d, of a query not prepared from these %d values", off, qstride, len(all)))
	}
	if !checkDotRowsQ8(out, ostride, q, qstride, m, width, k, kstride, n) {
		return
	}
	if len(next) == 0 {
		next = k
	}
	vk().dotRowsMultiQ8Pre(out, ostride, x.b[off/32*q8QueryBytes:], qstride/32*q8QueryBytes, m, width, k, kstride, n, scale, next)
}

// dotRowsMultiQ8Int8Go is the generic twin of the AVX-512 tier's q8_0
// dot: the query rows quantized by quantQueryQ8, then per (query, key)
// the sum over blocks of the exact integer dot times the query's and the
// key's scales (in float64; the kernel sums 8 float32 lanes per key, so
// the two differ by float32 rounding only).
func dotRowsMultiQ8Int8Go(out []float32, ostride int, q []float32, qstride, m, width int, k []byte, kstride, n int, scale float32) {
	steps := width / 32
	qq := quantQueryQ8(q, qstride, m, width)
	for j := 0; j < m; j++ {
		for i := 0; i < n; i++ {
			sum := 0.0
			for s := 0; s < steps; s++ {
				qb := (*qq)[(j*steps+s)*q8QueryBytes:]
				kb := k[i*kstride+s*q8_0Bytes:]
				dot := int32(0)
				for e := 0; e < 32; e++ {
					dot += int32(int8(qb[e])) * int32(int8(kb[2+e]))
				}
				dq := math.Float32frombits(binary.LittleEndian.Uint32(qb[128:]))
				sum += float64(dot) * float64(dq) * float64(fp16At(kb))
			}
			out[j*ostride+i] = float32(sum * float64(scale))
		}
	}
	queryPool.Put(qq)
}

// HeadsQ8 reports whether the tier in use has the q8_0 kernels over
// several KV heads at once (DotRowsHeadsQ8Query and AxpyRowsHeadsQ8 read
// each row once for all heads rather than a column per head).
func HeadsQ8() bool { return vk().dotRowsHeadsQ8Pre != nil }

// q8Bytes is the bytes of elems elements of a q8_0 row (a multiple of 32).
func q8Bytes(elems int) int { return elems / 32 * q8_0Bytes }

// checkHeads panics unless no offset between heads is negative and the
// last q8 of them (elements of q8_0 rows) are whole blocks.
func checkHeads(what string, heads, q8 int, offs ...int) {
	for i, o := range offs {
		if o < 0 || i >= len(offs)-q8 && o%32 != 0 {
			panic(fmt.Sprintf("kernels: %s over %d heads %d apart", what, heads, o))
		}
	}
}

// DotRowsHeadsQ8Query is DotRowsMultiNextQ8Query for heads KV heads of
// the same key rows: head g's m query rows start at off + g*hq of all, its
// keys hk elements into each row of k, its scores hout floats on in out.
// The bits are a call per head's. A tier with HeadsQ8 takes each row of
// keys once for every head, so decode over a deep cache reads it in order
// of address; elsewhere it is a call per head. hq and hk are multiples of
// 32.
func DotRowsHeadsQ8Query(out []float32, ostride, hout int, all []float32, x *Q8Query, off, qstride, hq, m, width int, k []byte, kstride, hk, n, heads int, scale float32) {
	checkHeads("DotRowsHeadsQ8Query", heads, 2, hout, hq, hk)
	for _, g := range []int{heads - 1, 0} { // the last head bounds every head
		if g < 0 {
			return
		}
		checkDotRowsQ8(out[min(len(out), g*hout):], ostride, all[min(len(all), off+g*hq):], qstride, m, width,
			k[min(len(k), q8Bytes(g*hk)):], kstride, n)
	}
	if m == 0 || n == 0 || width == 0 {
		return
	}
	if f := vk().dotRowsHeadsQ8Pre; f != nil && off%32 == 0 && qstride%32 == 0 && len(x.b) == len(all)/32*q8QueryBytes &&
		f(out, ostride, hout, x.b[off/32*q8QueryBytes:], qstride/32*q8QueryBytes, hq/32*q8QueryBytes, m, width, k, kstride, hk, n, heads, scale) {
		return
	}
	for g := range heads {
		DotRowsMultiNextQ8Query(out[g*hout:], ostride, all, x, off+g*hq, qstride, m, width, k[q8Bytes(g*hk):], kstride, n, scale, nil)
	}
}

// AxpyRowsHeadsQ8 is AxpyRowsMultiNextQ8 for heads KV heads of the same
// value rows: head g's m output rows start at g*hy of y, its weights at
// g*hp of p, its values hv elements into each row of v. The bits are a
// call per head's; a tier with HeadsQ8 reads each row of values once for
// every head. hv is a multiple of 32.
func AxpyRowsHeadsQ8(y []float32, ystride, hy, m, width int, p []float32, pstride, hp, n int, v []byte, vstride, hv, heads int) {
	checkHeads("AxpyRowsHeadsQ8", heads, 1, hy, hp, hv)
	for _, g := range []int{heads - 1, 0} { // the last head bounds every head
		if g < 0 {
			return
		}
		checkRows("AxpyRowsHeadsQ8 (outputs)", m, width, len(y)-min(len(y), g*hy), ystride)
		checkRows("AxpyRowsHeadsQ8 (weights)", m, n, len(p)-min(len(p), g*hp), pstride)
		checkQ8Rows("AxpyRowsHeadsQ8 (values)", n, width, len(v)-min(len(v), q8Bytes(g*hv)), vstride)
	}
	if m == 0 || n == 0 || width == 0 {
		return
	}
	if f := vk().axpyRowsHeadsQ8; f != nil && f(y, ystride, hy, m, width, p, pstride, hp, n, v, vstride, hv, heads) {
		return
	}
	for g := range heads {
		AxpyRowsMultiNextQ8(y[g*hy:], ystride, m, width, p[g*hp:], pstride, n, v[q8Bytes(g*hv):], vstride, nil)
	}
}
