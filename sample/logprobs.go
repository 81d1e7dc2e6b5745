package sample

import (
	"math"
	"slices"
)

// rawLogprobs fills tok's Logprob, Rank and its top n from log_softmax of
// the raw logits, as vLLM's Sampler.gather_logprobs does with
// logprobs_mode "raw_logprobs": penalties, masks, temperature and filters
// do not show in them.
func rawLogprobs(logits []float32, tok *Token, n int) {
	top := argmax(logits)
	if top < 0 {
		// No finite logit: no distribution to speak of.
		tok.Logprob, tok.Rank = float32(math.Inf(-1)), len(logits)
		return
	}
	m, x := float64(logits[top]), logits[tok.ID]
	sum, rank := 0.0, 0
	for _, v := range logits {
		sum += expNeg(float64(v) - m) // -inf adds 0
		// vLLM's rank counts the tokens whose logprob is >= the chosen one's.
		if v >= x {
			rank++
		}
	}
	lse := m + math.Log(sum)
	tok.Logprob, tok.Rank = float32(float64(x)-lse), rank

	n = min(n, len(logits))
	if n <= 0 {
		return
	}
	tok.Top = make([]TopLogprob, 0, n)
	for _, i := range topN(logits, n) {
		tok.Top = append(tok.Top, TopLogprob{ID: int(i), Logprob: float32(float64(logits[i]) - lse)})
	}
}

// topN is the ids of the n largest logits, largest first, lowest id first
// on ties; a size-n min-heap keeps it O(V log n) without a vocabulary-
// sized buffer.
func topN(l []float32, n int) []int32 {
	// worse reports whether a ranks below b.
	worse := func(a, b int32) bool {
		x, y := l[a], l[b]
		if xn, yn := x != x, y != y; xn || yn { // NaN ranks last
			if xn && yn {
				return a > b
			}
			return xn
		}
		if x != y {
			return x < y
		}
		return a > b
	}
	h := make([]int32, 0, n)
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && worse(h[c+1], h[c]) {
				c++
			}
			if !worse(h[c], h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := range l {
		id := int32(i)
		if len(h) < n {
			h = append(h, id)
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !worse(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			continue
		}
		if worse(h[0], id) {
			h[0] = id
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b int32) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return h
}

// Score is token id as if it had been sampled from logits: its logprob and
// rank under log_softmax of the raw logits, with the top n alternatives
// (none when n is 0). It scores a prompt's tokens (vLLM's prompt logprobs).
func Score(logits []float32, id, n int) Token {
	tok := Token{ID: id}
	rawLogprobs(logits, &tok, n)
	return tok
}
