package grammar

// Parser stacks live in an arena: a node is a position and the index of
// the node below it (the return position of the calling rule). Stacks
// share their tails, so a set of stacks is a set of top nodes. The trie
// walk rolls the arena back to a mark when it leaves a branch.

const (
	bottom  = -1 // below the root rule: the grammar is complete
	unknown = -2 // a context not known (mask precomputation)
)

type node struct {
	pos, next int32
}

// maxStacks bounds a state's stacks; dropping the rest keeps every
// remaining path valid, so an ambiguous grammar only loses options.
const maxStacks = 256

// maxExpand bounds the work of one expansion.
const maxExpand = 1 << 14

// state is a set of stacks.
type state struct {
	tops    []int32 // arena indices of stacks whose top is a terminal
	accept  bool    // a stack reached the bottom: the input may end here
	escaped bool    // a stack popped into the unknown context
}

func (s *state) reset() {
	s.tops = s.tops[:0]
	s.accept, s.escaped = false, false
}

func (s *state) empty() bool { return len(s.tops) == 0 && !s.accept && !s.escaped }

type arena struct {
	g     *Grammar
	nodes []node
	work  int
}

func (a *arena) push(pos, next int32) int32 {
	a.nodes = append(a.nodes, node{pos, next})
	return int32(len(a.nodes) - 1)
}

// expand adds to out the stacks reached from position pos with next
// below it, descending into rules until a terminal is on top.
func (a *arena) expand(pos, next int32, out *state) {
	a.work++
	if a.work > maxExpand {
		return
	}
	g := a.g
	switch e := g.elems[pos]; e.kind {
	case kEnd:
		switch next {
		case bottom:
			out.accept = true
		case unknown:
			out.escaped = true
		default:
			n := a.nodes[next]
			a.expand(n.pos, n.next, out)
		}
	case kRef:
		ret := next
		if g.elems[pos+1].kind != kEnd { // a tail call pushes nothing
			ret = a.push(pos+1, next)
		}
		for _, start := range g.alts[e.arg] {
			a.expand(start, ret, out)
		}
	default:
		for _, t := range out.tops {
			if n := a.nodes[t]; n.pos == pos && n.next == next {
				return
			}
		}
		if len(out.tops) < maxStacks {
			out.tops = append(out.tops, a.push(pos, next))
		}
	}
}

// advance adds to out the stacks of in after consuming byte c.
func (a *arena) advance(in *state, c byte, out *state) {
	a.work = 0
	g := a.g
	for _, t := range in.tops {
		n := a.nodes[t]
		if e := g.elems[n.pos]; e.kind == kClass && g.classes[e.arg].has(c) {
			a.expand(n.pos+1, n.next, out)
		}
	}
}

// advanceSpecial adds to out the stacks of in after special token id.
func (a *arena) advanceSpecial(in *state, id int32, out *state) {
	a.work = 0
	g := a.g
	for _, t := range in.tops {
		n := a.nodes[t]
		if e := g.elems[n.pos]; e.kind == kSpecial && e.arg == id {
			a.expand(n.pos+1, n.next, out)
		}
	}
}

// start is the initial state of g.
func (a *arena) start(out *state) {
	a.work = 0
	for _, p := range a.g.alts[a.g.root] {
		a.expand(p, bottom, out)
	}
}
