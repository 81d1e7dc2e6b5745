package kernels

import (
	"fmt"

	"github.com/siskin-ml/siskin/tensor"
)

// QuantizedActs holds activation rows converted once to the form the
// kernels multiply, so that several matrices applied to the same input (a
// layer's Q, K and V projections, or gate and up) share one quantization
// pass instead of repeating it in every MatMul. One value serves every
// weight type with the same VecDotType (Q4_K, Q5_K and Q6_K share Q8_K;
// Q4_0 and Q8_0 share Q8_0), or any float weight type. MatMulQ with it
// gives exactly MatMul's results.
//
// The zero value is ready to use; Quantize may be called again to reuse
// the buffer. It is not safe for concurrent Quantize calls, but several
// goroutines may run MatMulQ with it at once.
type QuantizedActs struct {
	tier    tier
	vdt     tensor.Type // VecDotType of the weights it was made for
	float   bool        // float activations (F32, F16, BF16 weights)
	cols, n int
	xs      int    // bytes per row
	data    []byte // n rows of xs bytes (or the float32 activations)
	buf     []byte
}

// Quantize converts n rows of x ([n][cols], cols = len(x)/n) for weights of
// type typ with the kernel tier in use. For float weight types it keeps x
// itself (no copy): x must not change while the result is used.
func (q *QuantizedActs) Quantize(typ tensor.Type, x []float32, n int) {
	q.QuantizeAfter(typ, x, n, nil)
}

// QuantizeAfter is Quantize of x after pre (if not nil) has rewritten
// each row i in place, pre(row, i), each row quantized as soon as pre is
// done with it, while it is still in cache: a pass of pre's own over a
// batch of FFN-wide rows, then Quantize's, read them from memory twice.
// x is left rewritten.
func (q *QuantizedActs) QuantizeAfter(typ tensor.Type, x []float32, n int, pre func(row []float32, i int)) {
	if !typ.Supported() {
		panic(fmt.Sprintf("kernels: unsupported weight type %s", typ))
	}
	if n <= 0 || len(x)%n != 0 {
		panic(fmt.Sprintf("kernels: %d activations are not %d rows", len(x), n))
	}
	cols := len(x) / n
	if bs := typ.BlockSize(); cols%bs != 0 {
		panic(fmt.Sprintf("kernels: rows of %d activations for %s weights (blocks of %d)", cols, typ, bs))
	}
	k := kernelFor(typ)
	q.tier, q.vdt, q.float, q.cols, q.n = tier(current.Load()), VecDotType(typ), k.float, cols, n
	if k.float {
		if pre != nil {
			ParallelFor(n, cols, 1, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					pre(x[i*cols:(i+1)*cols], i)
				}
			})
		}
		q.xs, q.data = 4*cols, f32Bytes(x)
		return
	}
	q.xs = k.actBytes(cols)
	q.data = alignedBuf(&q.buf, n*q.xs)
	quantizeRows(k, q.data, q.xs, x, cols, n, pre)
}

// Rows returns the number of activation rows.
func (q *QuantizedActs) Rows() int { return q.n }

// MatMulQ is MatMul with activations quantized beforehand: out[i*w.Rows+r]
// = row r of w times activation row i of q, bit-identical to MatMul with
// the activations q was made from. w's type must share q's VecDotType (or
// both be float types), and q must come from the tier in use.
func MatMulQ(out []float32, w *tensor.Matrix, q *QuantizedActs) {
	k := checkMatMulQ(out, w, q)
	if w.Rows == 0 {
		return
	}
	mul(out, w, k, q.data, q.xs, q.n)
}

// MatMulQs sets outs[i] = ws[i] times q for every i, exactly as MatMulQ
// does one at a time. When every weight is prepared, the products run as
// one parallel job over all their row groups: one hand-off between the
// threads instead of one per matrix, and one tail of small chunks
// (a layer's K and V projections are small, so these were a good part of
// their time when decoding).
func MatMulQs(outs [][]float32, ws []*tensor.Matrix, q *QuantizedActs) {
	if len(outs) != len(ws) {
		panic(fmt.Sprintf("kernels: MatMulQs: %d outputs for %d weights", len(outs), len(ws)))
	}
	var buf [4]*prepared
	ps := buf[:0]
	for i, w := range ws {
		checkMatMulQ(outs[i], w, q)
		if p := lookupPrepared(w); p != nil && w.Rows > 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) < len(ws) || len(ws) < 2 {
		for i, w := range ws {
			MatMulQ(outs[i], w, q)
		}
		return
	}
	mulPackedMulti(outs, ps, q.data, q.xs, q.n)
}

// checkMatMulQ panics unless out = w times q is a valid MatMulQ; it
// returns w's kernel.
func checkMatMulQ(out []float32, w *tensor.Matrix, q *QuantizedActs) *matKernel {
	checkWeights(w)
	if q.n == 0 {
		panic("kernels: MatMulQ with empty QuantizedActs")
	}
	if q.tier != tier(current.Load()) {
		panic(fmt.Sprintf("kernels: %s: activations quantized for tier %s, in use %s", w.Name, q.tier, Tier()))
	}
	k := kernelFor(w.Type)
	if k.float != q.float || (!k.float && VecDotType(w.Type) != q.vdt) {
		panic(fmt.Sprintf("kernels: %s: %s weights cannot use activations quantized for %s", w.Name, w.Type, q.vdt))
	}
	if w.Cols != q.cols {
		panic(fmt.Sprintf("kernels: %s: %d columns, activations of %d", w.Name, w.Cols, q.cols))
	}
	if len(out) != q.n*w.Rows {
		panic(fmt.Sprintf("kernels: %s: output of %d, want %d rows of %d", w.Name, len(out), q.n, w.Rows))
	}
	return k
}
