package sample

import (
	"cmp"
	"math"
	"slices"
)

// cand is a token still in the running. w = exp((logit-max)/T) is its
// probability up to a common factor; the most likely token has w = 1.
type cand struct {
	w  float64
	id int32
}

// byRank orders candidates most likely first, lowest id first on ties,
// the order greedy decoding and the top-k/top-p cuts use on ties.
func byRank(a, b cand) int {
	if c := cmp.Compare(b.w, a.w); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// small is the size below which selection just sorts.
const small = 24

// pivot is the median of three spread-out weights of c (len(c) >= 3).
func pivot(c []cand) float64 {
	a, b, d := c[len(c)/4].w, c[len(c)/2].w, c[3*len(c)/4].w
	if a > b {
		a, b = b, a
	}
	if b > d {
		b = d
	}
	return max(a, b)
}

// partition3 reorders c so that c[:lt] > v, c[lt:gt] == v, c[gt:] < v.
// Three ways, because logits often tie (masked or quantised models) and a
// two-way partition degrades to quadratic time on ties.
func partition3(c []cand, v float64) (lt, gt int) {
	i, gt := 0, len(c)
	for i < gt {
		switch w := c[i].w; {
		case w > v:
			c[lt], c[i] = c[i], c[lt]
			lt++
			i++
		case w < v:
			gt--
			c[i], c[gt] = c[gt], c[i]
		default:
			i++
		}
	}
	return lt, gt
}

// kthWeight is the k-th largest weight in c (1 <= k <= len(c)), found by
// quickselect in expected linear time; it reorders c.
func kthWeight(c []cand, k int) float64 {
	for {
		if len(c) <= small {
			slices.SortFunc(c, byRank)
			return c[k-1].w
		}
		lt, gt := partition3(c, pivot(c))
		switch {
		case k <= lt:
			c = c[:lt]
		case k <= gt:
			return c[lt].w
		default:
			k -= gt
			c = c[gt:]
		}
	}
}

// topK keeps the candidates at least as likely as the k-th most likely
// one. Ties with the k-th are kept, as vLLM masks only logits strictly
// below the k-th largest. It returns the kept prefix of c.
func topK(c []cand, k int) []cand {
	if k <= 0 || k >= len(c) {
		return c
	}
	t := kthWeight(c, k)
	n := 0
	for _, x := range c {
		if x.w >= t {
			c[n] = x
			n++
		}
	}
	return c[:n]
}

// topP keeps the nucleus: in order of decreasing probability, each token
// whose predecessors' mass is below p of the total, so the token that
// crosses p is kept and at least one always is. This is vLLM's rule (sort
// ascending, drop tokens whose cumulative probability is <= 1-p), found
// by a quickselect on mass instead of a full sort of the vocabulary.
// Equal weights are taken lowest id first. total is the mass p is a
// fraction of, which may include tokens not in c that are less likely
// than all of those in c. It returns the kept prefix of c.
func topP(c []cand, p, total float64) []cand {
	if p >= 1 || len(c) <= 1 {
		return c
	}
	target := p * total
	// c[:lo] is kept, c[hi:] dropped, c[lo:hi] undecided and no more
	// likely than anything in c[:lo]; acc is the mass of c[:lo].
	lo, hi, acc := 0, len(c), 0.0
	for lo < hi {
		s := c[lo:hi]
		if len(s) <= small {
			slices.SortFunc(s, byRank)
			for i, x := range s {
				if acc >= target {
					return c[:lo+i]
				}
				acc += x.w
			}
			return c[:hi]
		}
		v := pivot(s)
		lt, gt := partition3(s, v)
		mass := 0.0
		for _, x := range s[:lt] {
			mass += x.w
		}
		if acc+mass >= target {
			// The cut is inside the more likely block.
			hi = lo + lt
			continue
		}
		acc += mass
		eq, keep := s[lt:gt], 0
		for keep < len(eq) && acc < target {
			acc += v
			keep++
		}
		if keep < len(eq) {
			slices.SortFunc(eq, byRank)
			return c[:lo+lt+keep]
		}
		lo += gt
	}
	return c[:lo]
}

// race is the exponential race vLLM samples with: argmax w_i / E_i, with
// E_i ~ Exp(1) independent, picks token i with probability w_i / sum(w).
// It computes the equivalent argmin E_i / w_i, E_i = -ln U_i.
func race(c []cand, key uint64) int32 {
	best, bestID := math.Inf(1), int32(-1)
	for _, x := range c {
		u := uniform(key, x.id)
		// E/w > best iff u < exp(-best*w), and 1-t <= exp(-t): skip the
		// logarithm for the many unlikely tokens that cannot win. The
		// 2^-51 margin covers rounding, so no possible winner is skipped.
		if u < 1-best*x.w-0x1p-51 {
			continue
		}
		r := -math.Log(u) / x.w
		if r < best || r == best && x.id < bestID {
			best, bestID = r, x.id
		}
	}
	return bestID
}

// expNeg is e^x for x <= 0, to about 1e-10 relative and several times
// faster than math.Exp; sampling computes one per vocabulary entry. It is
// 0 below -105, past where a float32 softmax (vLLM's) underflows to 0.
func expNeg(x float64) float64 {
	if x < -105 {
		return 0
	}
	const (
		n64     = 64 * 1.4426950408889634 // 64 / ln 2
		ln2Hi   = 6.93147180369123816490e-01 / 64
		ln2Lo   = 1.90821492927058770002e-10 / 64
		shifter = 0x1.8p52 // adding it rounds to an integer
	)
	// x = (64k + j) ln2/64 + r: e^x = 2^k 2^(j/64) e^r, |r| <= ln2/128,
	// where the cubic's error term r^4/24 is below 4e-11.
	nf := (x*n64 + shifter) - shifter
	n := int64(nf)
	r := x - nf*ln2Hi - nf*ln2Lo
	e := exp2Frac[n&63] * (1 + r*(1+r*(1.0/2+r*(1.0/6))))
	return math.Float64frombits(math.Float64bits(e) + uint64(n>>6)<<52)
}

// exp2Frac[j] is 2^(j/64).
var exp2Frac = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()
