// Package model holds what the decoder architectures share: hyper-
// parameters, where weights come from (GGUF or a Hugging Face folder), and
// the building blocks a forward pass is written in. Each architecture
// lives in its own sub-package with a forward pass that reads top to
// bottom.
package model

import (
	"fmt"
	"math"

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

// Attend computes one query position's attention over every position the
// layer cache holds (the cache must already hold the query's own key).
// Causality and the sliding window are both given by what the cache
// holds: a sliding ring keeps exactly the last Window positions.
// scores is scratch of at least layer.Stored() floats.
func (a *Attention) Attend(out, q []float32, layer *kv.Layer, scores []float32) {
	first, n := layer.First(), layer.Stored()
	scores = scores[:n]
	group := a.Heads / a.KVHeads
	hd := a.HeadDim
	for h := 0; h < a.Heads; h++ {
		qh := q[h*hd : (h+1)*hd]
		kvOff := (h / group) * hd
		for i := 0; i < n; i++ {
			k := layer.Key(first + i)[kvOff : kvOff+hd]
			scores[i] = dot(qh, k) * a.Scale
		}
		kernels.Softmax(scores)
		oh := out[h*hd : (h+1)*hd]
		clear(oh)
		for i := 0; i < n; i++ {
			v := layer.Value(first + i)[kvOff : kvOff+hd]
			p := scores[i]
			for j := range oh {
				oh[j] += p * v[j]
			}
		}
	}
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// InvSqrt is 1/sqrt(n) rounded once to float32.
func InvSqrt(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
