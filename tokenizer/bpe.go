package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// wordCache remembers the ids of recent words: text repeats words, and
// merging is the costly step.
type wordCache struct {
	mu sync.Mutex
	m  map[string][]int
}

const wordCacheMax = 1 << 16

func newWordCache() *wordCache { return &wordCache{m: map[string][]int{}} }

func (c *wordCache) get(w string) ([]int, bool) {
	c.mu.Lock()
	ids, ok := c.m[w]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int) {
	if len(w) > 256 {
		return // long words are rare and would crowd out the useful entries
	}
	c.mu.Lock()
	if len(c.m) >= wordCacheMax {
		clear(c.m)
	}
	c.m[strings.Clone(w)] = ids // w may point into a long prompt
	c.mu.Unlock()
}

// bpeWord appends the ids of one pre-tokenized word.
func (t *Tokenizer) bpeWord(out []int, w string) []int {
	if ids, ok := t.cache.get(w); ok {
		return append(out, ids...)
	}
	ids := t.bpeMerge(w)
	t.cache.put(w, ids)
	return append(out, ids...)
}

// bpeMerge splits a word into its initial symbols and applies the merges
// in rank order, the leftmost pair first among equal ranks (as llama.cpp
// and Hugging Face both do). A heap over the adjacent pairs with a linked
// list of symbols keeps long words (runs of spaces, base64) O(n log n).
func (t *Tokenizer) bpeMerge(w string) []int {
	var syms []int32
	if t.byteLevel {
		if t.ignoreMerges {
			if id, ok := t.ids[byteLevelEncode(w)]; ok {
				return []int{id}
			}
		}
		syms = make([]int32, len(w))
		for i := 0; i < len(w); i++ {
			// A byte missing from the vocabulary gives -1 and is dropped
			// below, as llama.cpp drops it.
			syms[i] = int32(t.byteIDs[w[i]])
		}
	} else {
		if t.ignoreMerges {
			if id, ok := t.ids[w]; ok {
				return []int{id}
			}
		}
		syms = t.charSymbols(w)
	}
	n := len(syms)
	if n > 1 && n <= smallWord && t.merges.n > 0 {
		return t.mergeSmall(syms)
	}
	if n > 1 && t.merges.n > 0 {
		next := make([]int32, n)
		prev := make([]int32, n)
		for i := range syms {
			next[i] = int32(i + 1)
			prev[i] = int32(i - 1)
		}
		next[n-1] = -1
		h := pairHeap{}
		push := func(l, r int32) {
			if l < 0 || r < 0 {
				return
			}
			if m, ok := t.merges.get(syms[l], syms[r]); ok {
				h.push(pairItem{rank: m.rank, left: l, right: r, lid: syms[l], rid: syms[r]})
			}
		}
		for i := 0; i+1 < n; i++ {
			push(int32(i), int32(i+1))
		}
		for len(h) > 0 {
			it := h.pop()
			l, r := it.left, it.right
			// Skip pairs made stale by an earlier merge.
			if syms[l] != it.lid || syms[r] != it.rid || next[l] != r {
				continue
			}
			m, _ := t.merges.get(it.lid, it.rid)
			syms[l] = m.id
			syms[r] = -2 // merged away
			next[l] = next[r]
			if next[r] >= 0 {
				prev[next[r]] = l
			}
			push(prev[l], l)
			push(l, next[l])
		}
	}
	out := make([]int, 0, n)
	for _, id := range syms {
		if id >= 0 {
			out = append(out, int(id))
		}
	}
	return out
}

// smallWord is the symbol count up to which mergeSmall's quadratic scan
// beats the heap.
const smallWord = 48

// mergeSmall is bpeMerge's merge loop for short words: it keeps the rank
// of each adjacent pair in an array and scans it for the lowest (the
// leftmost among equals), which for the few symbols of a typical word
// costs less than heap upkeep and allocates nothing but the result.
func (t *Tokenizer) mergeSmall(in []int32) []int {
	var symBuf, rankBuf, idBuf [smallWord]int32
	n := len(in)
	syms, ranks, ids := symBuf[:n], rankBuf[:n], idBuf[:n]
	copy(syms, in)
	const none = int32(1<<31 - 1)
	pair := func(i int) {
		ranks[i] = none
		if syms[i] < 0 || syms[i+1] < 0 {
			return
		}
		if m, ok := t.merges.get(syms[i], syms[i+1]); ok {
			ranks[i], ids[i] = m.rank, m.id
		}
	}
	for i := 0; i+1 < n; i++ {
		pair(i)
	}
	for {
		best, bestRank := -1, none
		for i := 0; i+1 < n; i++ {
			if ranks[i] < bestRank {
				best, bestRank = i, ranks[i]
			}
		}
		if best < 0 {
			break
		}
		syms[best] = ids[best]
		copy(syms[best+1:], syms[best+2:n])
		copy(ranks[best+1:], ranks[best+2:n])
		copy(ids[best+1:], ids[best+2:n])
		n--
		if best+1 < n {
			pair(best)
		} else {
			ranks[best] = none
		}
		if best > 0 {
			pair(best - 1)
		}
	}
	out := make([]int, 0, n)
	for _, id := range syms[:n] {
		if id >= 0 {
			out = append(out, int(id))
		}
	}
	return out
}

// charSymbols gives the initial symbols of a word for a BPE vocabulary of
// characters (not byte-level): each character's id, or with byte fallback
// the <0xXX> ids of its bytes, or the unknown token.
func (t *Tokenizer) charSymbols(w string) []int32 {
	syms := make([]int32, 0, len(w))
	lastUnk := false
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+size]
		i += size
		if id, ok := t.ids[ch]; ok {
			syms = append(syms, int32(id))
			lastUnk = false
			continue
		}
		if t.byteFallback {
			ok := true
			for j := 0; j < len(ch); j++ {
				if t.byteIDs[ch[j]] < 0 {
					ok = false
				}
			}
			if ok {
				for j := 0; j < len(ch); j++ {
					syms = append(syms, int32(t.byteIDs[ch[j]]))
				}
				lastUnk = false
				continue
			}
		}
		if t.unk < 0 {
			continue // no unknown token: the character is dropped
		}
		if t.fuseUnk && lastUnk {
			continue
		}
		syms = append(syms, int32(t.unk))
		lastUnk = true
	}
	return syms
}

// pairItem is a candidate merge of symbols left and right, valid while
// they still hold ids lid and rid.
type pairItem struct {
	rank        int32
	left, right int32
	lid, rid    int32
}

// pairHeap is a min-heap by (rank, left).
type pairHeap []pairItem

func (h pairItem) less(o pairItem) bool {
	return h.rank < o.rank || (h.rank == o.rank && h.left < o.left)
}

func (h *pairHeap) push(x pairItem) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *pairHeap) pop() pairItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s[r].less(s[l]) {
			m = r
		}
		if !s[m].less(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
