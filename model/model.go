// Package model holds what the decoder architectures share: hyper-
// parameters, where weights come from (GGUF or a Hugging Face folder), and
// the building blocks a forward pass is written in. Each architecture
// lives in its own sub-package with a forward pass that reads top to
// bottom.
package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	// WeightBytes is the size of the weights the forward pass reads.
	WeightBytes() int64
}

// Forward runs one sequence's tokens; see ForwardBatch.
func Forward(m Model, c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	out, err := m.ForwardBatch([]Seq{{Cache: c, Tokens: tokens, AllLogits: all}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// NewCache builds a cache with a full or sliding layer per LayerSpec.
func (c *Config) NewCache() *kv.Cache {
	cache := &kv.Cache{Layers: make([]*kv.Layer, c.Layers)}
	for i, l := range c.LayerSpecs {
		w := 0
		if l.Sliding {
			w = c.SlidingWindow
		}
		cache.Layers[i] = kv.NewLayer(c.KVDim(), w)
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
// dequantizing whatever type the table is stored in.
func Embed(x []float32, table *tensor.Matrix, tokens []int) {
	for i, t := range tokens {
		row := x[i*table.Cols : (i+1)*table.Cols]
		if err := tensor.Dequantize(row, table.Type, table.Row(t)); err != nil {
			panic(err) // the table's shape was checked at load
		}
	}
}

// RMSNormRows normalizes each row of x (n rows of len(w)) into out.
func RMSNormRows(out, x, w []float32, eps float32) {
	d := len(w)
	for i := 0; i < len(x)/d; i++ {
		kernels.RMSNorm(out[i*d:(i+1)*d], x[i*d:(i+1)*d], w, eps)
	}
}

// Linear applies a weight to n rows of activations: out[n][w.Rows].
func Linear(out []float32, w *tensor.Matrix, x []float32, n int) {
	kernels.MatMul(out, w, x, n)
}

// Attention holds the per-layer attention shape.
type Attention struct {
	Heads, KVHeads, HeadDim int
	Scale                   float32
}

// Attend computes causal attention for every row of a batch at one layer,
// before this step's keys and values are appended to the caches: a row
// sees its sequence's earlier positions in the layer cache and the
// positions of this step in k and v (rows of the batch, after RoPE). A
// sliding layer (window > 0) also hides positions window or more behind.
//
// The work is split into tiles, each a few consecutive rows of one
// sequence and the query heads that share one KV head: a block of keys
// (and later of values) is read once from memory for all of a tile's
// rows and heads while it sits in the L1 cache, instead of once per row
// and head (kernels.DotRowsMulti and AxpyRowsMulti take the heads four
// at a time). Tiles run in parallel, costliest first; a step with fewer
// tiles than threads (one-token decode) gives each head its own tile
// instead. Each row and head is
// still computed exactly as a one-token step would (the same dot
// products, softmax and multiply-adds, in the same order), so batching
// never changes a result.
func (a *Attention) Attend(b *Batch, li, window int, q, k, v, out []float32) {
	group := a.Heads / a.KVHeads
	tiles := a.tiles(b, window, group)
	if len(tiles) < kernels.Threads() && group > 1 {
		tiles = a.tiles(b, window, 1) // one head per tile, for parallelism
	}
	slices.SortStableFunc(tiles, func(x, y attendTile) int { return cmp.Compare(y.cost, x.cost) })
	total := 0
	for _, t := range tiles {
		total += t.cost
	}
	unit := 2 * a.HeadDim * total / len(tiles)
	kernels.ParallelFor(len(tiles), unit, 1, func(lo, hi int) {
		sc := scoresPool.Get().(*[]float32)
		for _, t := range tiles[lo:hi] {
			if need := t.rows() * t.keys; cap(*sc) < need {
				*sc = make([]float32, need)
			}
			a.attendTile(b, li, window, q, k, v, out, t, (*sc)[:cap(*sc)])
		}
		scoresPool.Put(sc)
	})
}

// Tile sizes: query tokens per tile, and keys (or values) taken in one
// block by all of a tile's rows (with 256-float heads a block of 16 is
// 16 KiB, half an L1 cache).
const (
	tileTokens = 8
	keyBlock   = 16
)

// scoresPool holds the attention scores of a tile's rows.
var scoresPool = sync.Pool{New: func() any { return new([]float32) }}

// attendTile is a share of Attend: batch rows [t0, t1) of one sequence
// and query heads [h0, h1) of one KV head. keys is the number of
// positions the last row sees (the most of any row), cost an estimate of
// the multiply-adds per head dimension.
type attendTile struct {
	t0, t1, h0, h1 int
	keys, cost     int
}

func (t attendTile) rows() int { return (t.t1 - t.t0) * (t.h1 - t.h0) }

// first is the first position row t sees.
func first(b *Batch, window, t int) int {
	if window > 0 {
		return max(0, b.Pos[t]-window+1)
	}
	return 0
}

// tiles cuts the batch into tiles of up to tileTokens rows of a sequence
// and heads query heads.
func (a *Attention) tiles(b *Batch, window, heads int) []attendTile {
	var tiles []attendTile
	for t0 := 0; t0 < len(b.Tokens); {
		end := t0 + 1 // end of this sequence's rows
		for end < len(b.Tokens) && b.Row0[end] == b.Row0[t0] {
			end++
		}
		for ; t0 < end; t0 = min(t0+tileTokens, end) {
			t1 := min(t0+tileTokens, end)
			keys := b.Pos[t1-1] + 1 - first(b, window, t1-1)
			for h0 := 0; h0 < a.Heads; h0 += heads {
				tiles = append(tiles, attendTile{t0: t0, t1: t1, h0: h0, h1: h0 + heads,
					keys: keys, cost: (t1 - t0) * heads * keys})
			}
		}
	}
	return tiles
}

// attendTile computes one tile; scores holds tile.rows()*tile.keys floats.
func (a *Attention) attendTile(b *Batch, li, window int, q, k, v, out []float32, tile attendTile, scores []float32) {
	hd, group := a.HeadDim, a.Heads/a.KVHeads
	qd, kvd := a.Heads*hd, a.KVHeads*hd
	t0, t1, h0, h1 := tile.t0, tile.t1, tile.h0, tile.h1
	layer := b.Cache[t0].Layers[li]
	cached := layer.Len() // positions before this step
	row0 := b.Row0[t0]    // this sequence's first row in the batch
	kvOff := (h0 / group) * hd
	lo, hi := first(b, window, t0), b.Pos[t1-1]+1 // positions any row sees
	nh := h1 - h0
	// row returns the scores of row t's first head: those of head h0+j
	// follow tile.keys floats apart. The row sees positions [f, f+n).
	row := func(t int) (sc []float32, f, n int) {
		f = first(b, window, t)
		return scores[(t-t0)*nh*tile.keys:], f, b.Pos[t] + 1 - f
	}
	// blocks calls fn for blocks of consecutive positions [p0, p0+m)
	// whose key and value rows are kvd floats apart in ks and vs, in order
	// of position: those in the cache (one run, or two where a sliding
	// layer's ring wraps), then those of this step.
	blocks := func(fn func(p0, m int, ks, vs []float32)) {
		p := lo
		for p < min(hi, cached) {
			ks, vs, m := layer.Run(p, min(hi, cached)-p)
			for i := 0; i < m; i += keyBlock {
				fn(p+i, min(keyBlock, m-i), ks[i*kvd:], vs[i*kvd:])
			}
			p += m
		}
		for ; p < hi; p += keyBlock {
			r := row0 + p - cached
			fn(p, min(keyBlock, hi-p), k[r*kvd:], v[r*kvd:])
		}
	}
	// Scores, one block of keys at a time for every row and head.
	blocks(func(p0, m int, ks, _ []float32) {
		for t := t0; t < t1; t++ {
			sc, f, n := row(t)
			if s, e := max(p0, f), min(p0+m, f+n); s < e {
				kernels.DotRowsMulti(sc[s-f:], tile.keys, q[t*qd+h0*hd:], hd, nh, hd,
					ks[(s-p0)*kvd+kvOff:], kvd, e-s, a.Scale)
			}
		}
	})
	for t := t0; t < t1; t++ {
		sc, _, n := row(t)
		for j := 0; j < nh; j++ {
			kernels.Softmax(sc[j*tile.keys : j*tile.keys+n])
		}
		clear(out[t*qd+h0*hd : t*qd+h1*hd])
	}
	// The weighted sums of values, a block of value rows at a time; each
	// output element still takes its multiply-adds in order of position.
	blocks(func(p0, m int, _, vs []float32) {
		for t := t0; t < t1; t++ {
			sc, f, n := row(t)
			if s, e := max(p0, f), min(p0+m, f+n); s < e {
				kernels.AxpyRowsMulti(out[t*qd+h0*hd:], hd, nh, hd, sc[s-f:], tile.keys, e-s,
					vs[(s-p0)*kvd+kvOff:], kvd)
			}
		}
	})
}

// AppendKV stores this step's keys and values in each row's cache.
func AppendKV(b *Batch, li int, k, v []float32, kvd int) {
	for t := range b.Tokens {
		b.Cache[t].Layers[li].Append(k[t*kvd:(t+1)*kvd], v[t*kvd:(t+1)*kvd])
	}
}

// InvSqrt is 1/sqrt(n) rounded once to float32.
func InvSqrt(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
