package grammar

import (
	"bytes"
	"slices"
	"sync"

	"github.com/siskin-ml/siskin/tokenizer"
)

// Vocab is a model's vocabulary as bytes, walked as a sorted byte trie.
type Vocab struct {
	size    int
	tokens  [][]byte
	special []bool
	ends    []int32 // end-of-generation ids: allowed where the grammar may end
	maxLen  int
	order   []int32 // ordinary token ids sorted by their bytes
	trie    []trieNode
}

// trieNode is one node of the byte trie, stored in preorder. The tokens
// of its subtree are order[lo:hi], those ending at it order[lo:mid].
type trieNode struct {
	b           byte
	lo, mid, hi int32
	skip        int32 // index of the next node after the subtree
}

// NewVocab builds a vocabulary from each token's bytes. Special tokens
// (control tokens) are kept out of the trie: a grammar allows them only
// by id, and ends (end-of-generation ids) only where it may end.
func NewVocab(tokens [][]byte, special []bool, ends []int) *Vocab {
	v := &Vocab{size: len(tokens), tokens: tokens, special: special}
	for _, id := range ends {
		if id >= 0 && id < len(tokens) {
			v.ends = append(v.ends, int32(id))
		}
	}
	for id, t := range tokens {
		if len(t) > 0 && !special[id] {
			v.order = append(v.order, int32(id))
			v.maxLen = max(v.maxLen, len(t))
		}
	}
	slices.SortStableFunc(v.order, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	v.trie = append(v.trie, trieNode{lo: 0, mid: 0, hi: int32(len(v.order))})
	v.build(0, 0, int32(len(v.order)))
	v.trie[0].skip = int32(len(v.trie))
	return v
}

// build appends the children of the node whose subtree is order[lo:hi]
// at depth d (tokens of length d come first and end at the node).
func (v *Vocab) build(d int, lo, hi int32) {
	i := lo
	for i < hi && len(v.tokens[v.order[i]]) == d {
		i++
	}
	for i < hi {
		c := v.tokens[v.order[i]][d]
		j := i
		for j < hi && v.tokens[v.order[j]][d] == c {
			j++
		}
		k := i
		for k < j && len(v.tokens[v.order[k]]) == d+1 {
			k++
		}
		n := len(v.trie)
		v.trie = append(v.trie, trieNode{b: c, lo: i, mid: k, hi: j})
		v.build(d+1, i, j)
		v.trie[n].skip = int32(len(v.trie))
		i = j
	}
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }

// posMask is what a position decides alone: accepted tokens, and the
// tokens that leave the position's rule and so depend on the stack.
type posMask struct {
	accepted  []uint64
	dependent []int32 // in byte order
	lcp       []int32 // bytes dependent[i] shares with dependent[i-1]
}

type vocabMasks struct {
	mu     sync.Mutex
	byPos  map[int32]*posMask
	shared *vocabMasks // the prelude's, for positions below Grammar.shared
}

type maskCaches struct {
	mu sync.Mutex
	m  map[*Vocab]*vocabMasks
}

// preludeMasks holds the masks of the JSON prelude's positions, the same
// in every JSON grammar, per vocabulary.
var preludeMasks maskCaches

func (g *Grammar) vocabMasks(v *Vocab) *vocabMasks {
	var shared *vocabMasks
	if g.shared > 0 {
		shared = preludeMasks.forVocab(v, nil)
	}
	return g.masks.forVocab(v, shared)
}

// forVocab returns v's masks, made with the prelude's masks shared when
// first asked for: set once under the lock, since matchers are made on
// the server's goroutines while the engine's masks read it.
func (mc *maskCaches) forVocab(v *Vocab, shared *vocabMasks) *vocabMasks {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.m == nil {
		mc.m = map[*Vocab]*vocabMasks{}
	}
	vm := mc.m[v]
	if vm == nil {
		vm = &vocabMasks{byPos: map[int32]*posMask{}, shared: shared}
		mc.m[v] = vm
	}
	return vm
}

// posMask returns the mask of terminal position pos, computing it once.
func (vm *vocabMasks) get(g *Grammar, v *Vocab, pos int32) *posMask {
	if pos < g.shared {
		vm = vm.shared
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if pm := vm.byPos[pos]; pm != nil {
		return pm
	}
	pm := computePosMask(g, v, pos)
	vm.byPos[pos] = pm
	return pm
}

// computePosMask walks the trie from a stack holding pos over an unknown
// context.
func computePosMask(g *Grammar, v *Vocab, pos int32) *posMask {
	pm := &posMask{accepted: make([]uint64, (v.size+63)/64)}
	a := &arena{g: g}
	levels := make([]state, v.maxLen+2)
	level := func(d int) *state { return &levels[d] }
	s0 := level(0)
	s0.reset()
	s0.tops = append(s0.tops, a.push(pos, unknown))
	var walk func(n int32, d int, escaped bool)
	walk = func(n int32, d int, escaped bool) {
		in := level(d)
		for c := n + 1; c < v.trie[n].skip; c = v.trie[c].skip {
			t := &v.trie[c]
			mark := len(a.nodes)
			out := level(d + 1)
			out.reset()
			a.advance(in, t.b, out)
			esc := escaped || out.escaped
			switch {
			case len(out.tops) > 0 || out.escaped:
				pm.accept(v.order[t.lo:t.mid])
			case escaped:
				pm.dependent = append(pm.dependent, v.order[t.lo:t.mid]...)
			}
			switch {
			case len(out.tops) > 0:
				walk(c, d+1, esc)
			case esc:
				pm.dependent = append(pm.dependent, v.order[t.mid:t.hi]...)
			}
			a.nodes = a.nodes[:mark]
		}
	}
	walk(0, 0, false)
	pm.lcp = make([]int32, len(pm.dependent))
	for i := 1; i < len(pm.dependent); i++ {
		a, b := v.tokens[pm.dependent[i-1]], v.tokens[pm.dependent[i]]
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		pm.lcp[i] = int32(n)
	}
	return pm
}

func (pm *posMask) accept(ids []int32) {
	for _, id := range ids {
		pm.accepted[id>>6] |= 1 << (id & 63)
	}
}

// VocabFromTokenizer is the vocabulary of t: each token's decoded bytes,
// control tokens special, the end-of-generation ids as ends.
// It is built once per tokenizer.
func VocabFromTokenizer(t *tokenizer.Tokenizer) *Vocab {
	if v, ok := vocabs.Load(t); ok {
		return v.(*Vocab)
	}
	v, _ := vocabs.LoadOrStore(t, buildVocab(t))
	return v.(*Vocab)
}

var vocabs sync.Map // *tokenizer.Tokenizer -> *Vocab

func buildVocab(t *tokenizer.Tokenizer) *Vocab {
	n := t.VocabSize()
	tokens := make([][]byte, n)
	special := make([]bool, n)
	opt := tokenizer.DecodeOptions{Continuation: true}
	for id := range n {
		special[id] = t.IsSpecial(id) || t.IsEOG(id)
		if !special[id] {
			tokens[id] = []byte(t.DecodeWith([]int{id}, opt))
		}
	}
	return NewVocab(tokens, special, t.EOGs())
}
