package tokenizer

// spmEncode appends the ids of text (spaces already escaped as "▁") the
// way llama.cpp's SentencePiece tokenizer does: start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is a
// token with the highest score (leftmost on ties), then emit each symbol
// as its token or, if it is none, as <0xXX> byte tokens. With
// t.sentencePiece it follows the sentencepiece library's BPE instead,
// which differs only in which pieces merges may produce and in unused
// pieces, which are split back into the pair that formed them.
func (t *Tokenizer) spmEncode(out []int, text string) []int {
	m := spmMerger{t: t, text: text}
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		m.syms = append(m.syms, spmSymbol{start: off, n: n, prev: len(m.syms) - 1, next: len(m.syms) + 1})
		off += n
	}
	if len(m.syms) == 0 {
		return out
	}
	m.syms[len(m.syms)-1].next = -1
	for i := 1; i < len(m.syms); i++ {
		m.try(i-1, i)
	}
	m.mergeAll()
	return m.emit(out)
}

// spmSymbol is a run of text [start, start+n) in a linked list of the
// symbols left (n 0 once merged into the one before).
type spmSymbol struct {
	start, n   int
	prev, next int
}

// spmMerger is one text's symbols and the queue of pairs that may merge.
type spmMerger struct {
	t        *Tokenizer
	text     string
	syms     []spmSymbol
	h        bigramHeap
	revMerge map[string][2]string // sentencepiece: unused piece -> the pair that formed it
}

// try queues the pair of symbols l and r if their concatenation is a
// token a merge may produce.
func (m *spmMerger) try(l, r int) {
	if l < 0 || r < 0 {
		return
	}
	t, syms := m.t, m.syms
	s := m.text[syms[l].start : syms[l].start+syms[l].n+syms[r].n]
	id, ok := t.ids[s]
	if !ok {
		return
	}
	if t.sentencePiece {
		switch t.kinds[id] {
		case kindNormal, kindUserDefined:
		case kindUnused:
			if m.revMerge == nil {
				m.revMerge = map[string][2]string{}
			}
			ls := m.text[syms[l].start : syms[l].start+syms[l].n]
			m.revMerge[s] = [2]string{ls, s[len(ls):]}
		default:
			return // control, unknown and byte pieces are not merge results
		}
	}
	m.h.push(bigram{score: t.scores[id], left: l, right: r, size: len(s)})
}

// mergeAll merges the best queued pair until none is left.
func (m *spmMerger) mergeAll() {
	syms := m.syms
	for len(m.h) > 0 {
		b := m.h.pop()
		l, r := &syms[b.left], &syms[b.right]
		// A pair whose symbols changed since it was queued is stale.
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		m.try(l.prev, b.left)
		m.try(b.left, l.next)
	}
}

// emit appends the ids of the symbols left.
func (m *spmMerger) emit(out []int) []int {
	t, syms := m.t, m.syms
	for i := 0; i >= 0; i = syms[i].next {
		s := m.text[syms[i].start : syms[i].start+syms[i].n]
		if t.sentencePiece {
			out = t.spEmit(out, s, m.revMerge)
			continue
		}
		// Every merged symbol is a token by construction, so llama.cpp's
		// re-segmentation through its merge history never applies; only
		// single characters can be missing from the vocabulary.
		if id, ok := t.ids[s]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(s); j++ {
			if id := t.byteIDs[s[j]]; id >= 0 {
				out = append(out, id)
			} else if t.unk >= 0 {
				out = append(out, t.unk)
			}
		}
	}
	return out
}

// spEmit appends the ids of one final symbol the way sentencepiece does:
// an unused piece is split back into the pair that formed it, and a
// symbol that is no piece becomes its bytes (byte fallback) or one
// unknown token.
func (t *Tokenizer) spEmit(out []int, s string, revMerge map[string][2]string) []int {
	if id, ok := t.ids[s]; ok {
		if p, split := revMerge[s]; split && t.kinds[id] == kindUnused {
			out = t.spEmit(out, p[0], revMerge)
			return t.spEmit(out, p[1], revMerge)
		}
		return append(out, id)
	}
	if t.byteFallback {
		for j := 0; j < len(s); j++ {
			if id := t.byteIDs[s[j]]; id >= 0 {
				out = append(out, id)
			}
		}
		return out
	}
	if t.unk >= 0 {
		out = append(out, t.unk)
	}
	return out
}

// utf8Len is the sequence length a UTF-8 lead byte announces; stray
// continuation bytes count as one (llama.cpp's unicode_len_utf8).
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	default:
		return 4
	}
}

type bigram struct {
	score       float32
	left, right int
	size        int
}

// bigramHeap is a max-heap by score, then min by left.
type bigramHeap []bigram

func (a bigram) before(b bigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

func (h *bigramHeap) push(x bigram) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
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
		if r := l + 1; r < len(s) && s[r].before(s[l]) {
			m = r
		}
		if !s[m].before(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
