package sample

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// ErrNoToken is returned when the masks (allowed_token_ids, bad words,
// min_tokens) or the logits leave no token that can be sampled.
var ErrNoToken = errors.New("sample: every token is masked")

// Token is one sampled token. Logprob, Rank and Top are filled only when
// Params.Logprobs is set, from the raw model distribution.
type Token struct {
	ID      int
	Logprob float32 // log_softmax of the raw logits at ID
	Rank    int     // tokens at least as likely as ID, itself included: 1 for the most likely (vLLM's rank)
	Top     []TopLogprob
}

// TopLogprob is one of the most likely tokens and its raw logprob.
type TopLogprob struct {
	ID      int
	Logprob float32
}

// Sequence is the sampling state of one request: its parameters, its
// generator and the tokens it has produced. It is not safe for concurrent
// use; distinct sequences are independent.
type Sequence struct {
	p       Params
	greedy  bool
	seed    uint64
	vocab   int // vocabulary the token ids were checked against
	prompt  []int32
	allowed []int32 // sorted, nil for no restriction
	banned  []int32
	words   [][]int32 // bad words of two or more tokens
	stops   []int32
	bias    []tokenBias
	penal   bool // any penalty is on
	n       int  // tokens generated so far, the step
	out     []int32
	counts  map[int32]int32
}

type tokenBias struct {
	id   int32
	bias float32
}

// NewSequence validates p and returns the state for a request with the
// given prompt (the prompt feeds the repetition penalty). Token ids are
// checked against the vocabulary on the first Sample.
func NewSequence(p Params, prompt []int) (*Sequence, error) {
	if err := p.Validate(0); err != nil {
		return nil, err
	}
	s := &Sequence{p: p, seed: p.Seed}
	if !p.Seeded {
		s.seed = drawSeed()
	}
	switch {
	case p.Temperature < GreedyEpsilon:
		s.greedy = true
	case p.Temperature < MinTemperature:
		s.p.Temperature = MinTemperature
	}
	s.penal = p.RepetitionPenalty != 1 || p.FrequencyPenalty != 0 || p.PresencePenalty != 0
	if s.penal {
		s.counts = make(map[int32]int32)
		if p.RepetitionPenalty != 1 {
			s.prompt = idSet(prompt)
		}
	}
	if p.AllowedTokenIDs != nil {
		s.allowed = idSet(p.AllowedTokenIDs)
	}
	s.banned = idSet(p.BadTokenIDs)
	for _, w := range p.BadWords {
		if len(w) == 1 {
			s.banned = append(s.banned, int32(w[0]))
			continue
		}
		s.words = append(s.words, toInt32(w))
	}
	s.stops = idSet(slices.Concat(p.StopTokenIDs, p.EOSTokenIDs))
	for id, b := range p.LogitBias {
		s.bias = append(s.bias, tokenBias{int32(id), min(max(b, -MaxLogitBias), MaxLogitBias)})
	}
	slices.SortFunc(s.bias, func(a, b tokenBias) int { return cmp.Compare(a.id, b.id) })
	return s, nil
}

// Seed is the seed the sequence samples with, drawn from the server-wide
// generator if Params had none (worth logging to reproduce a request).
func (s *Sequence) Seed() uint64 { return s.seed }

// Len is the number of tokens sampled so far.
func (s *Sequence) Len() int { return s.n }

// Sample picks the next token from logits, one row of vocabulary size,
// and records it as generated. logits is only read: processing happens in
// pooled scratch, so the caller may reuse the slice and a Sequence holds
// no vocabulary-sized memory between calls.
//
// The steps and their order are vLLM v1's (vllm/v1/sample/sampler.py,
// Sampler.forward and Sampler.sample, with the built-in logits processors
// of vllm/v1/sample/logits_processor):
//
//  0. the structured-output mask (Params.Constraint): vLLM applies the
//     grammar's bitmask to the logits before its sampler runs, so even
//     the raw logprobs see it;
//  1. logprobs, if asked, from the raw logits (logprobs_mode raw_logprobs);
//  2. allowed_token_ids: every other token to -inf;
//  3. bad words: banned tokens to -inf;
//  4. min_tokens: stop and EOS ids to -inf while fewer than MinTokens
//     tokens were generated;
//  5. logit_bias added;
//  6. penalties, per token: repetition (prompt and output tokens), then
//     frequency and presence (output tokens);
//  7. greedy: argmax, lowest id on ties; otherwise
//  8. temperature: logits / T;
//  9. min_p against the most likely token's probability;
//  10. top_k, then top_p on what top_k kept (vLLM's apply_top_k_top_p);
//  11. the exponential race argmax p_i/E_i, E_i ~ Exp(1) drawn from the
//     sequence's own generator keyed by (seed, step).
//
// Where it knowingly differs from vLLM: the arithmetic is float64 where
// vLLM's is float32, so a cut may differ when it falls within rounding;
// equal probabilities are cut lowest id first (torch's sort leaves that
// order open); and the random numbers are not torch's, so a seed gives
// other tokens than vLLM gives for it (no server could match that).
func (s *Sequence) Sample(logits []float32) (Token, error) {
	v := len(logits)
	if v == 0 {
		return Token{}, errors.New("sample: empty logits")
	}
	if v > math.MaxInt32 {
		return Token{}, fmt.Errorf("sample: vocabulary of %d tokens is too large", v)
	}
	if v != s.vocab {
		if err := s.p.checkIDs(v); err != nil {
			return Token{}, err
		}
		if len(s.prompt) > 0 && (s.prompt[0] < 0 || int(s.prompt[len(s.prompt)-1]) >= v) {
			return Token{}, paramErr("prompt", "prompt contains token ids outside the vocabulary of %d", v)
		}
		s.vocab = v
	}
	sc := getScratch()
	defer scratchPool.Put(sc)

	if c := s.p.Constraint; c != nil {
		sc.masked = grow(sc.masked, v)
		copy(sc.masked, logits)
		c.Mask(sc.masked)
		logits = sc.masked
	}
	l := logits
	if s.modifies() {
		sc.work = grow(sc.work, v)
		l = sc.work
		copy(l, logits)
		s.process(l)
	}
	var id int
	if s.greedy {
		id = argmax(l)
	} else {
		id = s.draw(l, sc)
	}
	if id < 0 {
		return Token{}, ErrNoToken
	}
	tok := Token{ID: id}
	if s.p.Logprobs {
		rawLogprobs(logits, &tok, s.p.TopLogprobs)
	}
	if c := s.p.Constraint; c != nil {
		if err := c.Accept(id); err != nil {
			return Token{}, err
		}
	}
	s.accept(id)
	return tok, nil
}

// modifies reports whether any step before the temperature changes the
// logits this step; if none does, Sample reads the caller's slice as is.
func (s *Sequence) modifies() bool {
	return s.allowed != nil || len(s.banned) > 0 || len(s.words) > 0 ||
		(s.n < s.p.MinTokens && len(s.stops) > 0) || len(s.bias) > 0 ||
		(s.penal && (len(s.prompt) > 0 || s.n > 0))
}

var negInf = float32(math.Inf(-1))

// process applies steps 2 to 6 of Sample to l in place.
func (s *Sequence) process(l []float32) {
	if s.allowed != nil {
		j := 0
		for i := range l {
			if j < len(s.allowed) && int(s.allowed[j]) == i {
				j++
				continue
			}
			l[i] = negInf
		}
	}
	for _, id := range s.banned {
		l[id] = negInf
	}
	for _, w := range s.words {
		if prefix := w[:len(w)-1]; len(s.out) >= len(prefix) && slices.Equal(s.out[len(s.out)-len(prefix):], prefix) {
			l[w[len(w)-1]] = negInf
		}
	}
	if s.n < s.p.MinTokens {
		for _, id := range s.stops {
			l[id] = negInf
		}
	}
	for _, b := range s.bias {
		l[b.id] += b.bias
	}
	if !s.penal {
		return
	}
	// In float32 like vLLM: positive logits times 1/penalty, others times
	// the penalty (apply_repetition_penalties), then freq*count and
	// presence subtracted (apply_penalties).
	rep := float32(s.p.RepetitionPenalty)
	inv := 1 / rep
	repeat := func(id int32) {
		if l[id] > 0 {
			l[id] *= inv
		} else {
			l[id] *= rep
		}
	}
	if rep != 1 {
		for _, id := range s.prompt {
			repeat(id)
		}
	}
	freq, pres := float32(s.p.FrequencyPenalty), float32(s.p.PresencePenalty)
	for id, n := range s.counts {
		if rep != 1 {
			if _, inPrompt := slices.BinarySearch(s.prompt, id); !inPrompt {
				repeat(id)
			}
		}
		l[id] -= freq * float32(n)
		l[id] -= pres
	}
}

// argmax is the most likely token, the lowest id on ties, or -1 if every
// logit is -inf or NaN.
func argmax(l []float32) int {
	best, bv := -1, negInf
	for i, v := range l {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}

// draw applies steps 8 to 11 of Sample; -1 means nothing can be drawn.
func (s *Sequence) draw(l []float32, sc *scratch) int {
	c := s.filter(l, sc)
	sc.cand = c[:0] // keep what append grew for the next call
	if len(c) == 0 {
		return -1
	}
	return int(race(c, stepKey(s.seed, s.n)))
}

// filter applies steps 8 to 10 of Sample: it returns the tokens that may
// be drawn, with their weights, in sc.cand.
//
// Sorting or even partitioning the whole vocabulary would cost more than
// the sampling itself, so top-k keeps a k-sized heap of logits in one pass
// (and needs no exponential for the other tokens), and top-p collects the
// tokens above a threshold that usually holds the nucleus, a few dozen for
// a language model, while it sums the weights.
func (s *Sequence) filter(l []float32, sc *scratch) []cand {
	c := sc.cand[:0]
	top := argmax(l)
	if top < 0 {
		return c
	}
	m, invT := float64(l[top]), 1/s.p.Temperature
	// A token stays if its logit is >= least, that is if x = (logit-max)/T
	// >= lo: min_p compares p_i/p_max = e^x with MinP, and below -104 e^x
	// is 0 in float32 (vLLM's softmax). expNeg works a little further
	// down, so every token that stays has a positive weight. -inf and NaN
	// logits fail the comparison.
	least := float32(m + max(math.Log(s.p.MinP), -104)*s.p.Temperature)
	weight := func(v float32) float64 {
		if !(v >= least) {
			return 0
		}
		return expNeg((float64(v) - m) * invT)
	}
	// collect appends the tokens with a logit >= from that stay to c[:0].
	collect := func(from float32) []cand {
		c := c[:0]
		for i, v := range l {
			if v >= from {
				if w := weight(v); w > 0 {
					c = append(c, cand{w, int32(i)})
				}
			}
		}
		return c
	}

	k, p, total := s.p.TopK, s.p.TopP, 0.0
	switch {
	case k > 0 && k <= maxHeapK:
		// A min-heap of the k largest logits so far; out is the largest
		// logit left out of it.
		h, out, i := sc.heap[:0], negInf, 0
		for ; i < len(l) && len(h) < k; i++ {
			if v := l[i]; v >= least {
				h = append(h, logit{v, int32(i)})
				heapUp(h)
			}
		}
		// The root is >= least, so comparing with it alone is enough.
		// Plain comparisons: the max builtin is slow for NaN's sake.
		for ; i < len(l); i++ {
			if v := l[i]; v > h[0].v {
				out = max(out, h[0].v)
				h[0] = logit{v, int32(i)}
				heapDown(h)
			} else if v > out {
				out = v
			}
		}
		sc.heap = h
		if len(h) == k && out == h[0].v {
			// Tokens tied with the k-th were left out: vLLM keeps them.
			c = collect(h[0].v)
		} else {
			for _, x := range h {
				c = append(c, cand{weight(x.v), x.id})
			}
		}
		for _, x := range c {
			total += x.w
		}
	case k > 0:
		c = topK(collect(negInf), k)
		for _, x := range c {
			total += x.w
		}
	case p < 1:
		// The tokens at or above a threshold are a prefix of the sorted
		// order, so if their mass reaches p of the total they hold the
		// nucleus. Try a threshold that does for peaked distributions; if
		// not, one that always does: what lies below (1-p)/2 of the mean
		// weight sums to at most half of what top-p drops. The margin
		// keeps rounding in the order of sums from mattering.
		const guess = 0x1p-10
		mass := 0.0
		for i, v := range l {
			w := weight(v)
			total += w
			if w >= guess {
				c = append(c, cand{w, int32(i)})
				mass += w
			}
		}
		if mass < p*total*(1+1e-9) {
			floor := (1 - p) * total / float64(2*len(l))
			c = c[:0]
			for i, v := range l {
				if w := weight(v); w >= floor && w > 0 {
					c = append(c, cand{w, int32(i)})
				}
			}
		}
	default:
		c = collect(negInf)
	}
	return topP(c, p, total)
}

// maxHeapK is the largest top_k found with a heap; larger ones partition.
const maxHeapK = 4096

// logit is a token's logit in the top-k heap.
type logit struct {
	v  float32
	id int32
}

// heapUp restores the min-heap order of h after appending its last element.
func heapUp(h []logit) {
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if h[p].v <= h[j].v {
			return
		}
		h[p], h[j] = h[j], h[p]
		j = p
	}
}

// heapDown restores the min-heap order of h after replacing its root.
func heapDown(h []logit) {
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].v < h[c].v {
			c++
		}
		if h[i].v <= h[c].v {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// accept records id as generated.
func (s *Sequence) accept(id int) {
	s.n++
	if len(s.words) > 0 {
		s.out = append(s.out, int32(id))
	}
	if s.penal {
		s.counts[int32(id)]++
	}
}

// scratch is per-call working memory. Pooled rather than kept in each
// Sequence, so memory grows with the number of concurrent Sample calls,
// not with the number of live requests (about 3 MB each at a 150k vocab).
type scratch struct {
	masked []float32
	work   []float32
	cand   []cand
	heap   []logit
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// idSet is ids sorted and deduplicated, as int32.
func idSet(ids []int) []int32 {
	if ids == nil {
		return nil
	}
	out := toInt32(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}
