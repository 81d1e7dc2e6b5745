// Package sample picks the next token from logits with vLLM's semantics:
// the processors of vLLM v1's sampler in its order (see Sequence.Sample),
// raw-model logprobs, and per-request generators so that a request's
// tokens depend only on its seed and its own history, never on what else
// is in the batch.
package sample

import "fmt"

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

// Sampler is the simple interface of the command line: a Sequence with no
// prompt whose errors are programming errors.
type Sampler struct {
	seq *Sequence
}

// New returns a sampler for p, read the lenient way the command line
// always has: a temperature <= 0 is greedy, a top_p outside (0, 1) and a
// top_k <= 0 are off, a zero repetition penalty is off, and Seed is used
// even if Seeded is false. It panics if p is still invalid; servers should
// use NewSequence, which returns the error.
func New(p Params) *Sampler {
	if !(p.Temperature > 0) {
		p.Temperature = 0
	}
	if !(p.TopP > 0 && p.TopP < 1) {
		p.TopP = 1
	}
	p.TopK = max(p.TopK, 0)
	if p.RepetitionPenalty == 0 {
		p.RepetitionPenalty = 1
	}
	p.Seeded = true
	seq, err := NewSequence(p, nil)
	if err != nil {
		panic(fmt.Sprintf("sample.New: %v", err))
	}
	return &Sampler{seq: seq}
}

// Next picks a token from logits (one row of the vocabulary) and records
// it. It panics where Sequence.Sample fails, which only parameters the
// command line does not set (masks, bias ids) can cause.
func (s *Sampler) Next(logits []float32) int {
	tok, err := s.seq.Sample(logits)
	if err != nil {
		panic(fmt.Sprintf("sample: %v", err))
	}
	return tok.ID
}
