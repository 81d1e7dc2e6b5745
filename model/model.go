// Package model holds what the decoder architectures share: hyper-
// parameters, where weights come from (GGUF or a Hugging Face folder), and
// the building blocks a forward pass is written in. Each architecture
// lives in its own sub-package with a forward pass that reads top to
// bottom.
package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/tensor"
)

// Model is a loaded decoder.
type Model interface {
	Config() *Config
	// NewCache returns an empty KV cache shaped for this model.
	NewCache() *kv.Cache
	// ForwardBatch runs one step for several sequences at once: each
	// sequence's tokens follow the positions its cache holds, their keys and
	// values are appended, and per sequence the logits come back (one row
	// of Vocab per token when AllLogits, otherwise the last token's row).
	ForwardBatch(seqs []Seq) ([][]float32, error)
	// Forward runs one sequence: ForwardBatch with one Seq.
	Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error)
	// WeightBytes is the size of the weights one token's forward pass
	// reads: every matrix but a token embedding the output head does not
	// share, of which a token reads one row.
	WeightBytes() int64
	// HeldBytes is the size of all the weights, as held in memory.
	HeldBytes() int64
}

// Forward runs one sequence's tokens; see ForwardBatch.
func Forward(m Model, c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	out, err := m.ForwardBatch([]Seq{{Cache: c, Tokens: tokens, AllLogits: all}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// NewCache builds a cache with a full or sliding layer per LayerSpec, of
// element type KVType.
func (c *Config) NewCache() *kv.Cache {
	cache := &kv.Cache{Layers: make([]*kv.Layer, c.Layers)}
	for i, l := range c.LayerSpecs {
		w := 0
		if l.Sliding {
			w = c.SlidingWindow
		}
		cache.Layers[i] = kv.NewLayerOf(c.KVDim(), w, c.KVType)
	}
	return cache
}

// CheckTokens refuses ids outside the vocabulary and an empty batch.
func (c *Config) CheckTokens(tokens []int) error {
	if len(tokens) == 0 {
		return fmt.Errorf("no tokens to run")
	}
	for i, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return fmt.Errorf("token %d at index %d is outside the vocabulary [0, %d)", t, i, c.Vocab)
		}
	}
	return nil
}

// Embed writes the embedding rows of tokens into x ([n][cols]),
// dequantizing whatever type the table is stored in (a table tied to the
// output head may be held only packed: kernels.Row unpacks its rows).
func Embed(x []float32, table *tensor.Matrix, tokens []int) {
	var buf []byte
	if len(table.Data) == 0 {
		buf = make([]byte, table.RowStride())
	}
	for i, t := range tokens {
		row := x[i*table.Cols : (i+1)*table.Cols]
		if err := tensor.Dequantize(row, table.Type, kernels.Row(buf, table, t)); err != nil {
			panic(err) // the table's shape was checked at load
		}
	}
}

// RMSNormRows normalizes each row of x (n rows of len(w)) into out, the
// rows split between threads when there are enough of them (prefill): a
// serial pass per layer left the other threads idle.
func RMSNormRows(out, x, w []float32, eps float32) {
	d := len(w)
	EachRow(len(x)/d, d, func(i int) { kernels.RMSNorm(out[i*d:(i+1)*d], x[i*d:(i+1)*d], w, eps) })
}

// AddRows sets x[i] += y[i] over n rows (of len(x)/n), as kernels.Add,
// split between threads as EachRow.
func AddRows(x, y []float32, n int) {
	ApplyRows(x, y, n, kernels.Add)
}

// ApplyRows calls f on matching rows of x and y (n rows each), split
// between threads as EachRow; f works element by element, so the
// split changes no result.
func ApplyRows(x, y []float32, n int, f func(x, y []float32)) {
	if n <= 0 || !rowsParallel(n, len(x)/n) {
		f(x, y)
		return
	}
	d, e := len(x)/n, len(y)/n
	kernels.ParallelFor(n, d, 1, func(lo, hi int) {
		f(x[lo*d:hi*d], y[lo*e:hi*e])
	})
}

// EachRow calls f(t) for every row t < n (of d elements each), the rows
// split between threads when there are enough of them (prefill): per-row
// steps such as RMSNorm and RoPE, which a serial loop ran while the other
// threads waited.
func EachRow(n, d int, f func(t int)) {
	if !rowsParallel(n, d) {
		for t := 0; t < n; t++ {
			f(t)
		}
		return
	}
	kernels.ParallelFor(n, d, 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			f(t)
		}
	})
}

// rowsParallel reports whether n rows of d elements are worth splitting
// between threads (an element counted as one multiply-add).
func rowsParallel(n, d int) bool { return n > 1 && kernels.Parallel(n*d) }

// Linear applies a weight to n rows of activations: out[n][w.Rows].
func Linear(out []float32, w *tensor.Matrix, x []float32, n int) {
	kernels.MatMul(out, w, x, n)
}

// Linears applies several weights to the same n rows of activations x
// (outs[i] = ws[i] x, as Linear), quantizing x once for all of them when
// the weights take the same activation type: a layer's Q, K and V, or its
// gate and up projections, as one parallel job. kernels.MatMulQs gives
// MatMul's bits.
func Linears(x []float32, n int, ws []*tensor.Matrix, outs ...[]float32) {
	linearsAfter(x, n, nil, ws, outs)
}

// NormLinears is RMSNormRows(h, x, norm, eps) then Linears(h, n, ws,
// outs...), each row normalized just before its quantization, while it is
// in cache (the same results: RMSNorm is row by row).
func NormLinears(h, x, norm []float32, eps float32, n int, ws []*tensor.Matrix, outs ...[]float32) {
	AddNormLinears(h, x, nil, norm, eps, n, ws, outs...)
}

// AddNormLinears is NormLinears after AddRows(x, res, n) (res may be h),
// each row added to just before it is normalized; res nil adds nothing.
func AddNormLinears(h, x, res, norm []float32, eps float32, n int, ws []*tensor.Matrix, outs ...[]float32) {
	d := len(norm)
	linearsAfter(h, n, func(row []float32, i int) {
		xi := x[i*d : (i+1)*d]
		if res != nil {
			kernels.Add(xi, res[i*d:(i+1)*d])
		}
		kernels.RMSNorm(row, xi, norm, eps)
	}, ws, outs)
}

// linearsAfter is Linears of x after pre (if not nil) rewrote each row i,
// pre(row, i), as QuantizedActs.QuantizeAfter.
func linearsAfter(x []float32, n int, pre func(row []float32, i int), ws []*tensor.Matrix, outs [][]float32) {
	vdt := kernels.VecDotType(ws[0].Type)
	for _, w := range ws[1:] {
		if kernels.VecDotType(w.Type) != vdt {
			if pre != nil {
				d := len(x) / n
				EachRow(n, d, func(i int) { pre(x[i*d:(i+1)*d], i) })
			}
			for i, w := range ws {
				Linear(outs[i], w, x, n)
			}
			return
		}
	}
	q := actsPool.Get().(*kernels.QuantizedActs)
	q.QuantizeAfter(ws[0].Type, x, n, pre)
	kernels.MatMulQs(outs, ws, q)
	actsPool.Put(q)
}

// GatedFFN adds the attention block's output h to the residual stream x
// (n rows), then a gated feed-forward block: x += h, h = RMSNorm(x),
// x += down(act(gate h) * up h), with actMul doing the activation and the
// product in one pass (kernels.SiLUMul, kernels.GELUErfMul). Each row of
// x takes its sum just before it is normalized. h, gate and up are
// scratch after: n rows of the hidden size and of the feed-forward size.
func GatedFFN(x, h, gate, up []float32, n int, norm []float32, eps float32,
	wGate, wUp, wDown *tensor.Matrix, actMul func(x, y []float32)) {
	AddNormLinears(h, x, h, norm, eps, n, []*tensor.Matrix{wGate, wUp}, gate, up)
	// The activation runs row by row just before each row's quantization
	// for down, while the row is in cache (actMul works element by
	// element, so the results are those of a pass over all the rows).
	f := len(up) / n
	linearsAfter(gate, n, func(row []float32, i int) { actMul(row, up[i*f:(i+1)*f]) }, []*tensor.Matrix{wDown}, [][]float32{h})
	AddRows(x, h, n)
}

// actsPool keeps the quantized activations' buffers between calls.
var actsPool = sync.Pool{New: func() any { return new(kernels.QuantizedActs) }}

// InvSqrt is 1/sqrt(n) rounded once to float32.
func InvSqrt(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
