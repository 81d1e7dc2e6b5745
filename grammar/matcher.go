package grammar

import (
	"fmt"
	"math"
)

// Matcher follows one output through a grammar: Mask gives the tokens that
// may come next, Accept advances past the chosen one. Not safe for
// concurrent use; each request has its own.
type Matcher struct {
	g    *Grammar
	v    *Vocab
	vm   *vocabMasks
	a    arena
	cur  state
	tmp  [2]state
	bits []uint64
	done bool // an end-of-generation token was accepted

	lv    []state // per-depth states of checkDependent
	marks []int
}

// NewMatcher starts g over vocabulary v.
func NewMatcher(g *Grammar, v *Vocab) *Matcher {
	m := &Matcher{g: g, v: v, vm: g.vocabMasks(v), bits: make([]uint64, (v.size+63)/64)}
	m.a.g = g
	m.a.start(&m.cur)
	return m
}

// CanEnd reports whether the output so far is a complete sentence.
func (m *Matcher) CanEnd() bool { return m.cur.accept }

// Done reports whether an end token was accepted.
func (m *Matcher) Done() bool { return m.done }

// FillMask sets bits (one per token id, len >= (Size+63)/64) to the tokens
// allowed next. End-of-generation tokens are allowed where the grammar may
// end.
func (m *Matcher) FillMask(bits []uint64) {
	clear(bits)
	if m.done {
		return
	}
	set := func(id int32) { bits[id>>6] |= 1 << (id & 63) }
	for _, t := range m.cur.tops {
		n := m.a.nodes[t]
		e := m.g.elems[n.pos]
		if e.kind == kSpecial {
			if int(e.arg) < m.v.size {
				set(e.arg)
			}
			continue
		}
		pm := m.vm.get(m.g, m.v, n.pos)
		for i, w := range pm.accepted {
			bits[i] |= w
		}
		m.checkDependent(t, pm, bits)
	}
	if m.cur.accept {
		for _, id := range m.v.ends {
			set(id)
		}
	}
}

// checkDependent sets the bits of pm's dependent tokens that stack t
// accepts. The tokens are in byte order, so the walk keeps the states of
// the shared prefix and skips tokens that extend a prefix that failed.
func (m *Matcher) checkDependent(t int32, pm *posMask, bits []uint64) {
	if len(pm.dependent) == 0 {
		return
	}
	if m.lv == nil {
		m.lv = make([]state, m.v.maxLen+2)
		m.marks = make([]int, m.v.maxLen+2)
	}
	base := len(m.a.nodes)
	lv := m.lv
	lv[0].reset()
	lv[0].tops = append(lv[0].tops, t)
	m.marks[0] = base
	reached, failAt := 0, -1
	for i, id := range pm.dependent {
		l := int(pm.lcp[i])
		if failAt >= 0 && l > failAt {
			continue // extends a prefix that failed
		}
		failAt = -1
		reached = min(reached, l)
		if bits[id>>6]>>(id&63)&1 != 0 {
			continue
		}
		b := m.v.tokens[id]
		d := reached
		m.a.nodes = m.a.nodes[:m.marks[d]]
		for d < len(b) {
			out := &lv[d+1]
			out.reset()
			m.a.advance(&lv[d], b[d], out)
			if out.empty() {
				failAt = d
				break
			}
			d++
			m.marks[d] = len(m.a.nodes)
		}
		reached = d
		if d == len(b) {
			bits[id>>6] |= 1 << (id & 63)
		}
	}
	m.a.nodes = m.a.nodes[:base]
}

var negInf = float32(math.Inf(-1))

// Mask sets the logits of tokens that may not come next to -inf (ids past
// the vocabulary included).
func (m *Matcher) Mask(logits []float32) {
	m.FillMask(m.bits)
	for i := range logits {
		if i >= m.v.size || m.bits[i>>6]>>(i&63)&1 == 0 {
			logits[i] = negInf
		}
	}
}

// Accept advances past token id, or fails if the grammar does not allow it.
func (m *Matcher) Accept(id int) error {
	if m.done {
		return fmt.Errorf("grammar: token %d after the end", id)
	}
	if id < 0 || id >= m.v.size {
		return fmt.Errorf("grammar: token %d is outside the vocabulary", id)
	}
	for _, e := range m.v.ends {
		if int(e) == id && m.cur.accept {
			m.done = true
			return nil
		}
	}
	next := &m.tmp[1]
	next.reset()
	if m.v.special[id] {
		m.a.advanceSpecial(&m.cur, int32(id), next)
	} else {
		in := &m.tmp[0]
		in.reset()
		in.tops = append(in.tops, m.cur.tops...)
		for i, c := range m.v.tokens[id] {
			if i > 0 {
				in.reset()
				in.tops = append(in.tops, next.tops...)
				next.reset()
			}
			m.a.advance(in, c, next)
		}
	}
	if next.empty() {
		return fmt.Errorf("grammar: token %d (%q) is not allowed here", id, m.v.tokens[id])
	}
	m.cur.reset()
	m.cur.tops = append(m.cur.tops, next.tops...)
	m.cur.accept = next.accept
	m.compact()
	return nil
}

// AcceptBytes advances past raw bytes (for tests and forced text).
func (m *Matcher) AcceptBytes(b []byte) bool {
	for _, c := range b {
		next := &m.tmp[1]
		next.reset()
		m.a.advance(&m.cur, c, next)
		if next.empty() {
			return false
		}
		m.cur.reset()
		m.cur.tops = append(m.cur.tops, next.tops...)
		m.cur.accept = next.accept
	}
	m.compact()
	return true
}

// compact copies the live stacks to a fresh arena so that memory stays
// proportional to the stacks, not to the output's length.
func (m *Matcher) compact() {
	if len(m.a.nodes) < 4096 {
		return
	}
	old := m.a.nodes
	moved := map[int32]int32{}
	nodes := make([]node, 0, 256)
	var move func(i int32) int32
	move = func(i int32) int32 {
		if i < 0 {
			return i
		}
		if j, ok := moved[i]; ok {
			return j
		}
		next := move(old[i].next)
		nodes = append(nodes, node{old[i].pos, next})
		j := int32(len(nodes) - 1)
		moved[i] = j
		return j
	}
	for k, t := range m.cur.tops {
		m.cur.tops[k] = move(t)
	}
	m.a.nodes = nodes
}
