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
// Rows and heads are independent, so they run in parallel; each is
// computed exactly as a one-token step would, so batching never changes
// a result.
func (a *Attention) Attend(b *Batch, li, window int, q, k, v, out []float32) {
	hd, group := a.HeadDim, a.Heads/a.KVHeads
	qd, kvd := a.Heads*hd, a.KVHeads*hd
	parallel(len(b.Tokens)*a.Heads, b.MaxLen*hd, func(lo, hi int) {
		scores := make([]float32, b.MaxLen)
		for job := lo; job < hi; job++ {
			t, h := job/a.Heads, job%a.Heads
			layer := b.Cache[t].Layers[li]
			pos, first := b.Pos[t], 0
			if window > 0 {
				first = max(0, pos-window+1)
			}
			cached := layer.Len() // positions before this step
			row0 := b.Row0[t]     // this sequence's first row in the batch
			kvOff := (h / group) * hd
			key := func(p int) []float32 {
				if p < cached {
					return layer.Key(p)[kvOff : kvOff+hd]
				}
				r := row0 + p - cached
				return k[r*kvd+kvOff : r*kvd+kvOff+hd]
			}
			value := func(p int) []float32 {
				if p < cached {
					return layer.Value(p)[kvOff : kvOff+hd]
				}
				r := row0 + p - cached
				return v[r*kvd+kvOff : r*kvd+kvOff+hd]
			}
			qh := q[t*qd+h*hd : t*qd+(h+1)*hd]
			sc := scores[:pos+1-first]
			nc := max(0, min(cached, pos+1)-first) // positions in the cache
			for i := 0; i < nc; i++ {
				sc[i] = kernels.VecDot(qh, key(first+i)) * a.Scale
			}
			r := row0 + first + nc - cached // first batch row
			if nc < len(sc) {
				kernels.DotRows(sc[nc:], qh, k[r*kvd+kvOff:], kvd, a.Scale)
			}
			kernels.Softmax(sc)
			oh := out[t*qd+h*hd : t*qd+(h+1)*hd]
			clear(oh)
			for i := 0; i < nc; i++ {
				kernels.VecAxpy(oh, value(first+i), sc[i])
			}
			if nc < len(sc) {
				kernels.AxpyRows(oh, sc[nc:], v[r*kvd+kvOff:], kvd)
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

// parallel splits [0, n) into ranges run on several goroutines when the
// work (n times unitWork multiply-adds) pays for it.
func parallel(n, unitWork int, fn func(lo, hi int)) {
	nt := min(kernels.Threads(), n)
	if n*unitWork < 1<<15 || nt <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + nt - 1) / nt
	for lo := 0; lo < n; lo += chunk {
		wg.Go(func() { fn(lo, min(lo+chunk, n)) })
	}
	wg.Wait()
}

// InvSqrt is 1/sqrt(n) rounded once to float32.
func InvSqrt(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
