// Package grammar constrains decoding to a language: JSON Schema, a
// regular expression, a choice list or a GBNF grammar is compiled once into
// a context-free grammar over bytes, run as a pushdown automaton, and
// turned at every step into the set of vocabulary tokens that keep the
// output a prefix of the language (see Matcher).
//
// The grammar's rules are flat sequences of elements: byte classes, rule
// references and special-token terminals. A position (an element index)
// with the stack of return positions below it is one automaton state; a
// set of such stacks is one parser state. Tokens are checked the way
// XGrammar does it: for each position, the tokens that are accepted or
// rejected without looking below the position's own rule are computed
// once per grammar and vocabulary (by a walk of the vocabulary's byte
// trie), and only the few that pop out of the rule are walked at run time.
package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Element kinds.
const (
	kEnd     = iota // end of an alternative
	kClass          // one byte of a class (arg: class index)
	kRef            // a rule (arg: rule index)
	kSpecial        // a special token (arg: token id)
)

type elem struct {
	kind uint8
	arg  int32
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]>>(b&63)&1 != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}

// Grammar is a compiled grammar; safe for concurrent use.
type Grammar struct {
	elems   []elem
	alts    [][]int32 // per rule: the start position of each alternative
	classes []byteSet
	root    int32
	names   []string // rule names, for errors and String
	shared  int32    // positions below this are the JSON prelude's (see conv)

	masks maskCaches

	lazyMu sync.Mutex
	lazy   map[triggerKey]*triggerMasks // see Lazy
}

// ErrTooComplex is returned for a grammar beyond the engine's limits.
var ErrTooComplex = errors.New("grammar: too complex")

// builder assembles rules; identical rules are shared.
type builder struct {
	rules    [][][]elem
	names    []string
	index    map[string]int32
	classes  []byteSet
	classIdx map[byteSet]int32
	err      error
	prelude  int // rules that every JSON grammar starts with
}

func newBuilder() *builder {
	return &builder{index: map[string]int32{}, classIdx: map[byteSet]int32{}}
}

// maxRules bounds a grammar's size (bounded repetition expands to rules).
const maxRules = 200000

// newRule reserves a rule to be defined later (for recursion).
func (b *builder) newRule(name string) int32 {
	b.rules = append(b.rules, nil)
	b.names = append(b.names, name)
	if len(b.rules) > maxRules && b.err == nil {
		b.err = ErrTooComplex
	}
	return int32(len(b.rules) - 1)
}

func (b *builder) define(r int32, alts [][]elem) { b.rules[r] = alts }

// key is a rule's identity for sharing.
func ruleKey(alts [][]elem) string {
	var sb strings.Builder
	for _, a := range alts {
		for _, e := range a {
			sb.WriteByte(e.kind + '0')
			sb.WriteString(strconv.Itoa(int(e.arg)))
			sb.WriteByte(',')
		}
		sb.WriteByte('|')
	}
	return sb.String()
}

// rule returns a rule with these alternatives, sharing an identical one.
func (b *builder) rule(alts [][]elem) int32 {
	k := ruleKey(alts)
	if r, ok := b.index[k]; ok {
		return r
	}
	r := b.newRule("")
	b.define(r, alts)
	b.index[k] = r
	return r
}

func (b *builder) class(s byteSet) elem {
	i, ok := b.classIdx[s]
	if !ok {
		i = int32(len(b.classes))
		b.classes = append(b.classes, s)
		b.classIdx[s] = i
	}
	return elem{kClass, i}
}

// lit is the bytes of s in sequence.
func (b *builder) lit(s string) []elem {
	out := make([]elem, len(s))
	for i := 0; i < len(s); i++ {
		var c byteSet
		c.add(s[i])
		out[i] = b.class(c)
	}
	return out
}

func (b *builder) set(lo, hi byte) []elem {
	var c byteSet
	c.addRange(lo, hi)
	return []elem{b.class(c)}
}

func cat(parts ...[]elem) []elem {
	var out []elem
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// alt is one of the sequences.
func (b *builder) alt(seqs ...[]elem) []elem {
	if len(seqs) == 1 {
		return seqs[0]
	}
	return []elem{{kRef, b.rule(seqs)}}
}

func (b *builder) opt(x []elem) []elem { return b.alt(x, nil) }

// spread is the alternatives of x: those of its rule when x is a single
// defined rule, so that repetitions splice them in and stay in one rule
// frame (a token that spans several repetitions is then decided by the
// position alone, not by the stack).
func (b *builder) spread(x []elem) [][]elem {
	if len(x) == 1 && x[0].kind == kRef && b.rules[x[0].arg] != nil {
		return b.rules[x[0].arg]
	}
	return [][]elem{x}
}

// then is x followed by tail, as one rule whose alternatives end in a
// tail call; with empty it may also be empty.
func (b *builder) then(x, tail []elem, empty bool) []elem {
	var alts [][]elem
	for _, a := range b.spread(x) {
		alts = append(alts, cat(a, tail))
	}
	if empty {
		alts = append(alts, nil)
	}
	return []elem{{kRef, b.rule(alts)}}
}

// star is x repeated any number of times (x must not match empty).
func (b *builder) star(x []elem) []elem {
	k := "*" + ruleKey([][]elem{x})
	if r, ok := b.index[k]; ok {
		return []elem{{kRef, r}}
	}
	r := b.newRule("")
	b.index[k] = r
	var alts [][]elem
	for _, a := range b.spread(x) {
		alts = append(alts, cat(a, []elem{{kRef, r}}))
	}
	b.define(r, append(alts, nil))
	return []elem{{kRef, r}}
}

// repeat is x between lo and hi times; hi < 0 is unbounded. It is a chain
// of rules, each a tail call of the next.
func (b *builder) repeat(x []elem, lo, hi int) []elem {
	var tail []elem
	if hi < 0 {
		tail = b.star(x)
		hi = lo
	}
	for i := lo; i < hi && b.err == nil; i++ {
		tail = b.then(x, tail, true)
	}
	for i := 0; i < lo && b.err == nil; i++ {
		tail = b.then(x, tail, false)
	}
	return tail
}

// finish flattens the rules into a Grammar rooted at root.
func (b *builder) finish(root []elem) (*Grammar, error) {
	if b.err != nil {
		return nil, b.err
	}
	top := b.newRule("root")
	b.define(top, [][]elem{root})
	b.prune()
	if len(b.rules[top]) == 0 {
		return nil, fmt.Errorf("grammar: nothing can be generated")
	}
	g := &Grammar{classes: b.classes, root: top, names: b.names}
	g.alts = make([][]int32, len(b.rules))
	for r, alts := range b.rules {
		if r == b.prelude {
			g.shared = int32(len(g.elems))
		}
		if len(alts) == 0 {
			continue // dead, and no longer referenced
		}
		for _, a := range alts {
			g.alts[r] = append(g.alts[r], int32(len(g.elems)))
			g.elems = append(g.elems, a...)
			g.elems = append(g.elems, elem{kind: kEnd})
		}
	}
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}

// prune removes alternatives that refer to rules with none (a reference
// whose compilation failed after it was first used): the grammar then
// generates a subset, which stays valid.
func (b *builder) prune() {
	for changed := true; changed; {
		changed = false
		for r, alts := range b.rules {
			kept := alts[:0:0]
			for _, a := range alts {
				if !slices.ContainsFunc(a, func(e elem) bool { return e.kind == kRef && len(b.rules[e.arg]) == 0 }) {
					kept = append(kept, a)
				}
			}
			if len(kept) != len(alts) {
				b.rules[r] = kept
				changed = true
			}
		}
	}
}

func (b *builder) ruleName(r int32) string {
	if b.names[r] != "" {
		return b.names[r]
	}
	return "#" + strconv.Itoa(int(r))
}

// nullable reports, per rule, whether it matches the empty string.
func (g *Grammar) nullable() []bool {
	n := make([]bool, len(g.alts))
	for changed := true; changed; {
		changed = false
		for r, starts := range g.alts {
			if n[r] {
				continue
			}
			for _, p := range starts {
				if g.seqNullable(p, n) {
					n[r], changed = true, true
					break
				}
			}
		}
	}
	return n
}

func (g *Grammar) seqNullable(p int32, n []bool) bool {
	for ; g.elems[p].kind != kEnd; p++ {
		if e := g.elems[p]; e.kind != kRef || !n[e.arg] {
			return false
		}
	}
	return true
}

// checkLeftRecursion refuses a rule that can reach itself without
// consuming input: expanding it would never end.
func (g *Grammar) checkLeftRecursion() error {
	null := g.nullable()
	// left[r] = rules r can expand to at its left edge.
	state := make([]uint8, len(g.alts)) // 0 new, 1 on path, 2 done
	var visit func(r int32) error
	visit = func(r int32) error {
		switch state[r] {
		case 1:
			return fmt.Errorf("grammar: rule %s is left-recursive (it can reach itself without consuming input)", g.ruleName(r))
		case 2:
			return nil
		}
		state[r] = 1
		for _, p := range g.alts[r] {
			for ; g.elems[p].kind == kRef; p++ {
				if err := visit(g.elems[p].arg); err != nil {
					return err
				}
				if !null[g.elems[p].arg] {
					break
				}
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.alts {
		if err := visit(int32(r)); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grammar) ruleName(r int32) string {
	if g.names[r] != "" {
		return g.names[r]
	}
	return "#" + strconv.Itoa(int(r))
}

// Positions is the number of element positions (a measure of size).
func (g *Grammar) Positions() int { return len(g.elems) }
