// Package sample picks the next token from logits: greedy, or seeded
// sampling with temperature, top-k and top-p.
package sample

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Params are the sampling settings of one request.
type Params struct {
	Temperature float64 // 0 means greedy
	TopK        int     // <= 0 means all tokens
	TopP        float64 // <= 0 or >= 1 means all tokens
	Seed        uint64
}

// Sampler draws tokens for one sequence from its own seeded generator, so
// a seeded request is reproducible whatever else runs beside it.
type Sampler struct {
	p   Params
	rng *rand.Rand
	idx []int
	pr  []float64
}

// New returns a sampler for p.
func New(p Params) *Sampler {
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x5deece66d))}
}

// Argmax is the index of the largest logit, the lowest index on ties.
func Argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// Next picks a token from logits (one row of the vocabulary).
func (s *Sampler) Next(logits []float32) int {
	if s.p.Temperature <= 0 {
		return Argmax(logits)
	}
	n := len(logits)
	if cap(s.idx) < n {
		s.idx, s.pr = make([]int, n), make([]float64, n)
	}
	idx := s.idx[:n]
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if k := s.p.TopK; k > 0 && k < n {
		idx = idx[:k]
	}
	// Softmax over the kept tokens at the given temperature, in float64.
	pr := s.pr[:len(idx)]
	maxL := float64(logits[idx[0]])
	sum := 0.0
	for i, id := range idx {
		pr[i] = math.Exp((float64(logits[id]) - maxL) / s.p.Temperature)
		sum += pr[i]
	}
	keep := len(idx)
	if tp := s.p.TopP; tp > 0 && tp < 1 {
		cum := 0.0
		for i := range pr {
			cum += pr[i] / sum
			if cum >= tp {
				keep = i + 1
				break
			}
		}
		sum = 0
		for _, v := range pr[:keep] {
			sum += v
		}
	}
	r := s.rng.Float64() * sum
	for i := 0; i < keep; i++ {
		r -= pr[i]
		if r < 0 {
			return idx[i]
		}
	}
	return idx[keep-1]
}
