package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FromGBNF compiles a grammar written in llama.cpp's GBNF dialect, the
// language of llama-server's "grammar" field, rooted at the rule "root".
// Compiled grammars are cached by the source's hash.
//
// Supported: rules "name ::= body" (names of letters, digits, '-' and
// '_'; a body ends at the end of its line, continues inside brackets and
// parentheses and on a following line that starts with '|'), alternation
// '|', grouping '(...)', the postfixes '?', '*', '+', '{m}', '{m,}',
// '{m,n}' and '{,n}' (counts up to 1000), string literals "..." and
// character classes [...] with ranges and '^' negation (both in Unicode
// code points, matched as UTF-8), '.' (any character), the escapes \n
// \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH, and '#' comments.
// Recursion is exact (the engine is a pushdown automaton); left
// recursion is refused, as llama.cpp refuses it. Not supported (an
// error says so): token references <...> and !<...>.
func FromGBNF(src string) (*Grammar, error) {
	return cachedCompile("gbnf", []byte(src), func() (*Grammar, error) { return compileGBNF(src) })
}

// GBNFError is a syntax or reference error in a GBNF grammar.
type GBNFError struct {
	Line, Col int // 1-based position of the error in the source
	Msg       string
}

func (e *GBNFError) Error() string {
	return fmt.Sprintf("GBNF grammar: line %d column %d: %s", e.Line, e.Col, e.Msg)
}

// gbnfMaxCount bounds {m,n} counts: repetition expands to rules.
const gbnfMaxCount = 1000

// gbnfMaxDepth bounds the nesting of parentheses.
const gbnfMaxDepth = 200

type gbnfParser struct {
	src     string
	pos     int
	b       *builder
	rc      *regexConv
	rules   map[string]int32
	defined map[string]bool
	usedAt  map[string]int // where each rule is first referenced
	depth   int
}

// gbnfBail carries a GBNFError up through the recursive descent.
type gbnfBail struct{ err *GBNFError }

func compileGBNF(src string) (g *Grammar, err error) {
	b := newBuilder()
	p := &gbnfParser{src: src, b: b, rc: &regexConv{b: b, capStar: -1}, rules: map[string]int32{}, defined: map[string]bool{}, usedAt: map[string]int{}}
	defer func() {
		if r := recover(); r != nil {
			bail, ok := r.(gbnfBail)
			if !ok {
				panic(r)
			}
			g, err = nil, bail.err
		}
	}()
	p.grammar()
	return p.finish()
}

func (p *gbnfParser) fail(at int, format string, args ...any) {
	line := 1 + strings.Count(p.src[:at], "\n")
	col := at - strings.LastIndexByte(p.src[:at], '\n')
	panic(gbnfBail{&GBNFError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}})
}

func (p *gbnfParser) finish() (*Grammar, error) {
	var undefined []string
	for name := range p.usedAt {
		if !p.defined[name] {
			undefined = append(undefined, name)
		}
	}
	if len(undefined) > 0 {
		slices.SortFunc(undefined, func(x, y string) int { return p.usedAt[x] - p.usedAt[y] })
		p.fail(p.usedAt[undefined[0]], "rule %q is used but not defined", undefined[0])
	}
	root, ok := p.rules["root"]
	if !ok || !p.defined["root"] {
		p.fail(len(p.src), "no rule named root")
	}
	p.b.inlineLeading()
	g, err := p.b.finish([]elem{{kRef, root}})
	if err != nil && strings.Contains(err.Error(), "left-recursive") {
		return nil, fmt.Errorf("GBNF grammar: %s (left recursion, or repeating something that can match nothing, is not supported)", strings.TrimPrefix(err.Error(), "grammar: "))
	}
	return g, err
}

// grammar is a sequence of rules separated by newlines.
func (p *gbnfParser) grammar() {
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			return
		}
		p.rule()
	}
}

// rule is name ::= alternatives, ended by a newline or the end.
func (p *gbnfParser) rule() {
	at := p.pos
	name := p.name()
	if name == "" {
		p.fail(at, "expected a rule name, got %q", p.peekText())
	}
	p.space(false)
	if !strings.HasPrefix(p.src[p.pos:], "::=") {
		p.fail(p.pos, "expected ::= after the rule name %q", name)
	}
	p.pos += 3
	p.space(true)
	if p.defined[name] {
		p.fail(at, "rule %q is defined twice", name)
	}
	p.defined[name] = true
	r := p.ruleRef(name)
	p.b.define(r, p.alternatives(false))
	if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		p.fail(p.pos, "expected the end of the line, got %q", p.peekText())
	}
}

func (p *gbnfParser) ruleRef(name string) int32 {
	r, ok := p.rules[name]
	if !ok {
		r = p.b.newRule(name)
		p.rules[name] = r
	}
	return r
}

// alternatives is sequences separated by '|'. At the top level a
// sequence ends at a newline, and a following line may go on with '|'.
func (p *gbnfParser) alternatives(nested bool) [][]elem {
	alts := [][]elem{p.sequence(nested)}
	for {
		save := p.pos
		p.space(true)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			p.space(true)
			alts = append(alts, p.sequence(nested))
			continue
		}
		if !nested {
			p.pos = save
		}
		return alts
	}
}

// sequence is items up to '|', ')' or (at the top level) a newline.
func (p *gbnfParser) sequence(nested bool) []elem {
	var seq []elem
	for {
		p.space(nested)
		if p.pos >= len(p.src) {
			return seq
		}
		switch p.src[p.pos] {
		case '|', ')', '\n', '\r':
			return seq
		}
		seq = append(seq, p.item()...)
		if p.b.err != nil {
			p.fail(p.pos, "the grammar is too large (bounded repetitions expand to rules)")
		}
	}
}

// item is a primary followed by any postfixes.
func (p *gbnfParser) item() []elem {
	x := p.primary()
	for p.pos < len(p.src) {
		lo, hi := 0, -1
		switch p.src[p.pos] {
		case '*':
			p.pos++
		case '+':
			p.pos++
			lo = 1
		case '?':
			p.pos++
			hi = 1
		case '{':
			lo, hi = p.count()
		default:
			return x
		}
		if len(x) > 0 {
			x = p.b.repeat(x, lo, hi)
		}
	}
	return x
}

// count is {m}, {m,}, {m,n} or {,n}.
func (p *gbnfParser) count() (lo, hi int) {
	at := p.pos
	p.pos++
	p.space(true)
	lo, okLo := p.number()
	p.space(true)
	hi = lo
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		p.space(true)
		var okHi bool
		if hi, okHi = p.number(); !okHi {
			hi = -1
		}
		p.space(true)
	} else if !okLo {
		p.fail(at, "expected a count in {...}")
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '}' {
		p.fail(p.pos, "expected } to close the count")
	}
	p.pos++
	if hi >= 0 && hi < lo {
		p.fail(at, "repetition {%d,%d} has its maximum below its minimum", lo, hi)
	}
	if lo > gbnfMaxCount || hi > gbnfMaxCount {
		p.fail(at, "repetition counts above %d are not supported", gbnfMaxCount)
	}
	return lo, hi
}

func (p *gbnfParser) number() (int, bool) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' && p.pos-start < 9 {
		p.pos++
	}
	if p.pos == start {
		return 0, false
	}
	n, _ := strconv.Atoi(p.src[start:p.pos])
	return n, true
}

// primary is a rule name, a literal, a class, '.' or a group.
func (p *gbnfParser) primary() []elem {
	at := p.pos
	switch c := p.src[p.pos]; {
	case c == '"':
		p.pos++
		var sb strings.Builder
		for {
			if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
				p.fail(at, "unterminated string literal")
			}
			if p.src[p.pos] == '"' {
				p.pos++
				return p.b.lit(sb.String())
			}
			sb.WriteRune(p.char())
		}
	case c == '[':
		return p.class()
	case c == '.':
		p.pos++
		return p.rc.class([]rune{0, 0x10ffff})
	case c == '(':
		p.pos++
		if p.depth++; p.depth > gbnfMaxDepth {
			p.fail(at, "parentheses nest deeper than %d", gbnfMaxDepth)
		}
		p.space(true)
		alts := p.alternatives(true)
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			p.fail(at, "unclosed (")
		}
		p.pos++
		p.depth--
		return p.b.alt(alts...)
	case c == '<' || c == '!':
		p.fail(at, "token references (<...>, !<...>) are not supported")
	case isNameByte(c):
		name := p.name()
		if _, ok := p.usedAt[name]; !ok {
			p.usedAt[name] = at
		}
		return []elem{{kRef, p.ruleRef(name)}}
	}
	p.fail(at, "unexpected %q", p.peekText())
	return nil
}

// class is [...] or [^...]: one code point in (or not in) the ranges.
func (p *gbnfParser) class() []elem {
	at := p.pos
	p.pos++
	negate := p.pos < len(p.src) && p.src[p.pos] == '^'
	if negate {
		p.pos++
	}
	var ranges []rune
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			p.fail(at, "unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo := p.char()
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			hi = p.char()
			if hi < lo {
				p.fail(at, "range %q-%q is reversed", lo, hi)
			}
		}
		ranges = append(ranges, lo, hi)
	}
	ranges = mergeRanges(ranges)
	if negate {
		ranges = complementRanges(ranges)
	}
	if len(ranges) == 0 {
		p.fail(at, "character class matches nothing")
	}
	x := p.rc.class(ranges)
	if p.rc.err != nil {
		p.fail(at, "%v", p.rc.err)
	}
	return x
}

// char reads one character of a literal or class, decoding escapes.
func (p *gbnfParser) char() rune {
	at := p.pos
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			p.fail(at, "invalid UTF-8")
		}
		p.pos += n
		return r
	}
	if p.pos+1 >= len(p.src) {
		p.fail(at, "unfinished escape")
	}
	e := p.src[p.pos+1]
	p.pos += 2
	switch e {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case '\\', '"', '[', ']', '-', '^', '/', '\'':
		return rune(e)
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if p.pos+n > len(p.src) {
			p.fail(at, "\\%c needs %d hex digits", e, n)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > utf8.MaxRune || (v >= 0xd800 && v <= 0xdfff) {
			p.fail(at, "invalid escape \\%c%s", e, p.src[p.pos:p.pos+n])
		}
		p.pos += n
		return rune(v)
	}
	p.fail(at, "unknown escape \\%c", e)
	return 0
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// space skips blanks and comments, and newlines too when newlines is set.
func (p *gbnfParser) space(newlines bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case newlines && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func (p *gbnfParser) peekText() string {
	end := min(p.pos+10, len(p.src))
	return p.src[p.pos:end]
}

// mergeRanges sorts rune range pairs and merges overlapping ones.
func mergeRanges(r []rune) []rune {
	type span struct{ lo, hi rune }
	var s []span
	for i := 0; i+1 < len(r); i += 2 {
		s = append(s, span{r[i], r[i+1]})
	}
	slices.SortFunc(s, func(a, b span) int { return int(a.lo - b.lo) })
	var out []rune
	for _, x := range s {
		if n := len(out); n > 0 && x.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], x.hi)
			continue
		}
		out = append(out, x.lo, x.hi)
	}
	return out
}

// complementRanges is the code points (0 to U+10FFFF) outside merged ranges.
func complementRanges(r []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(r); i += 2 {
		if r[i] > next {
			out = append(out, next, r[i]-1)
		}
		next = r[i+1] + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, next, utf8.MaxRune)
	}
	return out
}

// inlineLeading replaces a reference that starts an alternative with the
// alternatives of the rule it names, when that rule is small and not
// recursive: "r ::= char r | ε" becomes "r ::= [a-z] r | "\\" esc r | ε".
// Token masks are precomputed per position over an unknown stack, so a
// token that spans several characters is decided ahead of time only when
// the characters' positions share a rule frame; this keeps a GBNF loop
// over a named rule as cheap as the JSON Schema grammars' loops.
func (b *builder) inlineLeading() {
	rec := b.recursive()
	budget := 4*b.size() + 4096
	for changed := true; changed && budget > 0; {
		changed = false
		for r, alts := range b.rules {
			var out [][]elem
			spliced := false
			for _, a := range alts {
				if len(a) == 0 || a[0].kind != kRef || rec[a[0].arg] || int(a[0].arg) == r {
					out = append(out, a)
					continue
				}
				sub := b.rules[a[0].arg]
				if len(sub) == 0 || len(sub) > 32 {
					out = append(out, a)
					continue
				}
				for _, s := range sub {
					out = append(out, cat(s, a[1:]))
					budget -= len(s) + len(a)
				}
				spliced = true
			}
			if spliced && len(out) <= 256 {
				b.rules[r] = out
				changed = true
			}
		}
	}
}

func (b *builder) size() int {
	n := 0
	for _, alts := range b.rules {
		for _, a := range alts {
			n += len(a) + 1
		}
	}
	return n
}

// recursive marks the rules that can reach themselves (Tarjan's strongly
// connected components).
func (b *builder) recursive() []bool {
	n := len(b.rules)
	index, low := make([]int32, n), make([]int32, n)
	onStack, rec := make([]bool, n), make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	next := int32(0)
	var visit func(v int32)
	visit = func(v int32) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, a := range b.rules[v] {
			for _, e := range a {
				if e.kind != kRef {
					continue
				}
				w := e.arg
				if w == v {
					rec[v] = true
				}
				if index[w] < 0 {
					visit(w)
					low[v] = min(low[v], low[w])
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []int32
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		if len(comp) > 1 {
			for _, w := range comp {
				rec[w] = true
			}
		}
	}
	for v := range int32(n) {
		if index[v] < 0 {
			visit(v)
		}
	}
	return rec
}
