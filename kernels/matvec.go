package kernels

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/siskin-ml/siskin/tensor"
)

func checkMatrix(w *tensor.Matrix, n int, x, out []float32) {
	checkWeights(w)
	if len(x) != n*w.Cols {
		panic(fmt.Sprintf("kernels: %s: %d activations, want %d rows of %d", w.Name, len(x), n, w.Cols))
	}
	if len(out) != n*w.Rows {
		panic(fmt.Sprintf("kernels: %s: output of %d, want %d rows of %d", w.Name, len(out), n, w.Rows))
	}
}

// isFloat reports whether weights of type t multiply float32 activations
// in MatMul (no activation quantization).
func isFloat(t tensor.Type) bool {
	return t == tensor.F32 || t == tensor.F16 || t == tensor.BF16 || t == tensor.W4A16
}

// MatVecFloat sets out[r] = Dot(w.Type, w.Row(r), x) for every row: the
// float-activation reference for any weight type (always the generic
// code; a matrix held only packed is read row by row through Row).
func MatVecFloat(out []float32, w *tensor.Matrix, x []float32) {
	checkMatrix(w, 1, x, out)
	dot := dotFunc(w.Type)
	parallelFor(funcTask(func(lo, hi int) {
		var buf []byte
		if len(w.Data) == 0 {
			buf = make([]byte, w.RowStride())
		}
		for r := lo; r < hi; r++ {
			out[r] = dot(Row(buf, w, r), x)
		}
	}), w.Rows, w.Cols, 1)
}

// MatVec sets out[r] to row r of w times x, as llama.cpp computes it: F32,
// F16 and BF16 weights use the float activations; quantized weights
// quantize x once to 8 bits (VecDotType) and use integer dot products.
// The generic tier is exactly Dot and DotQ; SIMD tiers differ from them
// only in the order of the float additions (see the package tests for the
// bounds).
func MatVec(out []float32, w *tensor.Matrix, x []float32) {
	MatMul(out, w, x, 1)
}

// A matKernel is one tier's implementation of the products of weight
// rows of one type with activation rows.
type matKernel struct {
	// float kernels take the float32 activations themselves (as bytes);
	// the others take rows quantized by quant, actBytes(cols) each.
	float    bool
	actBytes func(cols int) int
	quant    func(dst []byte, x []float32)
	// vec sets out[r], for r < len(out), to row r of w (rows of stride
	// bytes) times the activation row x.
	vec func(out []float32, w []byte, stride int, x []byte)
	// vec4, if not nil, does the same for rows weight rows and the four
	// activation rows x[i*xstride:], writing out[i*ostride+r]; each
	// result is bit-identical to vec's.
	vec4 func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int)
	// vec8, if not nil, is vec4 for eight activation rows (the float
	// types on AVX-512: their weights are widened once for all eight).
	vec8 func(out []float32, ostride int, w []byte, stride, rows int, x []byte, xstride int)
	// packed, if not nil, multiplies prepared (packed) weights.
	packed *packedKernel
	// rowTile, if not 0, is the weight rows of a MatMul tile: a multiple
	// of the rows vec4 takes at a time.
	rowTile int
}

// Blocking of MatMul for n > 1: weight rows are taken rowTile at a time
// (they stay in L1/L2 while every activation row passes over them) and
// activation rows actTileBytes at a time (they stay in L2 while the
// thread's weight rows pass).
const (
	rowTile      = 16
	actTileBytes = 256 << 10
	// floatRowTile is rowTile for float weights, a multiple of the 3 rows
	// their 4-row kernels take at a time.
	floatRowTile = 24
)

type matTask struct {
	k               *matKernel
	out             []float32
	w               []byte
	stride, rows, n int
	x               []byte
	xs, actTile     int
	rowTile         int
}

func (t *matTask) run(lo, hi int) {
	k, stride, rows := t.k, t.stride, t.rows
	if t.n == 1 {
		k.vec(t.out[lo:hi], t.w[lo*stride:hi*stride], stride, t.x[:t.xs])
		return
	}
	for a0 := 0; a0 < t.n; a0 += t.actTile {
		a1 := min(a0+t.actTile, t.n)
		for r0 := lo; r0 < hi; r0 += t.rowTile {
			r1 := min(r0+t.rowTile, hi)
			wr := t.w[r0*stride : r1*stride]
			i := a0
			if k.vec8 != nil {
				for ; i+8 <= a1; i += 8 {
					k.vec8(t.out[i*rows+r0:], rows, wr, stride, r1-r0, t.x[i*t.xs:], t.xs)
				}
			}
			if k.vec4 != nil {
				for ; i+4 <= a1; i += 4 {
					k.vec4(t.out[i*rows+r0:], rows, wr, stride, r1-r0, t.x[i*t.xs:], t.xs)
				}
			}
			for ; i < a1; i++ {
				k.vec(t.out[i*rows+r0:i*rows+r1], wr, stride, t.x[i*t.xs:(i+1)*t.xs])
			}
		}
	}
}

type quantTask struct {
	k        *matKernel
	dst      []byte
	x        []float32
	xs, cols int
	pre      func(row []float32, i int) // if not nil, rewrites row i first
}

func (t *quantTask) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		row := t.x[i*t.cols : (i+1)*t.cols]
		if t.pre != nil {
			t.pre(row, i)
		}
		t.k.quant(t.dst[i*t.xs:(i+1)*t.xs], row)
	}
}

// Recycled task structs and activation buffers, so a call allocates
// nothing in the steady state.
var (
	matTasks   = sync.Pool{New: func() any { return new(matTask) }}
	quantTasks = sync.Pool{New: func() any { return new(quantTask) }}
	bufPool    = sync.Pool{New: func() any { return new([]byte) }}
)

// alignedBuf returns n bytes of *bp starting on a 64-byte boundary.
func alignedBuf(bp *[]byte, n int) []byte {
	if cap(*bp) < n+64 {
		*bp = make([]byte, n+64)
	}
	b := (*bp)[:cap(*bp)]
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b)))) & 63
	return b[off : off+n]
}

// f32Bytes views float32s as their bytes (little-endian, as the kernels
// read them).
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// bytesF32 is the inverse of f32Bytes; b must come from f32Bytes.
func bytesF32(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// MatMul multiplies n activation rows x ([n][w.Cols], row-major) by w,
// writing out[i*w.Rows+r] = row r of w times row i of x. Each output is
// bit-identical to MatVec on that activation row, so a batched prompt
// gives the same numbers as feeding it one token at a time. Prepared
// matrices (Prepare) use the packed kernels.
func MatMul(out []float32, w *tensor.Matrix, x []float32, n int) {
	checkMatrix(w, n, x, out)
	if n == 0 || w.Rows == 0 {
		return
	}
	k := kernelFor(w.Type)
	if k.float {
		mul(out, w, k, f32Bytes(x), 4*w.Cols, n)
		return
	}
	xs := k.actBytes(w.Cols)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	xq := alignedBuf(bp, n*xs)
	quantizeRows(k, xq, xs, x, w.Cols, n, nil)
	mul(out, w, k, xq, xs, n)
}

// quantizeRows quantizes n rows of cols activations into dst (xs bytes
// per row) with k's quantizer, in parallel, each row after pre (if not
// nil) rewrote it.
func quantizeRows(k *matKernel, dst []byte, xs int, x []float32, cols, n int, pre func(row []float32, i int)) {
	q := quantTasks.Get().(*quantTask)
	*q = quantTask{k: k, dst: dst, x: x, xs: xs, cols: cols, pre: pre}
	parallelFor(q, n, 4*cols, 1)
	*q = quantTask{}
	quantTasks.Put(q)
}

// mul multiplies w by n activation rows already in k's layout (xs bytes
// each).
func mul(out []float32, w *tensor.Matrix, k *matKernel, xq []byte, xs, n int) {
	if p := lookupPrepared(w); p != nil {
		mulPacked(out, p, xq, xs, n)
		return
	}
	t := matTasks.Get().(*matTask)
	*t = matTask{k: k, out: out, w: w.Data, stride: w.RowStride(), rows: w.Rows, n: n, x: xq, xs: xs}
	t.actTile = max(4, actTileBytes/max(t.xs, 1)/4*4)
	t.rowTile = rowTile
	if k.float {
		t.rowTile = floatRowTile
	}
	if k.rowTile != 0 {
		t.rowTile = k.rowTile
	}
	grain := 8 // one row: the AVX-512 float and W16A16 kernels' group of rows
	if n > 1 {
		grain = t.rowTile
	}
	parallelFor(t, w.Rows, n*w.Cols, grain)
	*t = matTask{}
	matTasks.Put(t)
}

// genericKernels wraps the reference dot products: MatMul in the generic
// tier computes exactly Dot (float weights) and DotQ (quantized weights).
func genericKernels() map[tensor.Type]*matKernel {
	m := make(map[tensor.Type]*matKernel)
	for _, typ := range []tensor.Type{tensor.F32, tensor.F16, tensor.BF16, tensor.W4A16} {
		dot := dotFunc(typ)
		m[typ] = &matKernel{
			float: true,
			vec: func(out []float32, w []byte, stride int, x []byte) {
				xf := bytesF32(x)
				for r := range out {
					out[r] = dot(w[r*stride:(r+1)*stride], xf)
				}
			},
		}
	}
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q4_1, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.W4A8, tensor.W8A8, tensor.W16A16} {
		dot := dotQFunc(typ)
		m[typ] = &matKernel{
			actBytes: func(cols int) int { return ActivationBytes(typ, cols) },
			quant:    func(dst []byte, x []float32) { QuantizeActivationsTo(dst, typ, x) },
			vec: func(out []float32, w []byte, stride int, x []byte) {
				for r := range out {
					out[r] = dot(w[r*stride:(r+1)*stride], x)
				}
			},
		}
	}
	return m
}
