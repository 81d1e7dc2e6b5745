package grammar

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// FromRegex compiles a regular expression (RE2 syntax, which covers what
// JSON Schema patterns and vLLM's regex outputs use; no lookaround or
// backreferences) to a grammar whose sentences match it in full.
func FromRegex(pattern string) (*Grammar, error) {
	b := newBuilder()
	seq, err := b.regex(pattern, false)
	if err != nil {
		return nil, err
	}
	return b.finish(seq)
}

// maxRepeat bounds counted repetition; beyond it a{n,m} keeps m = n+maxRepeat
// (a subset of the language, so outputs still match).
const maxRepeat = 64

// regex converts pattern; inJSON makes every character its JSON string
// encoding (quote and backslash escaped, control characters left out).
func (b *builder) regex(pattern string, inJSON bool) ([]elem, error) {
	re, err := parseRegex(pattern)
	if err != nil {
		return nil, err
	}
	return b.regexTree(re, pattern, inJSON, -1)
}

func parseRegex(pattern string) (*syntax.Regexp, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v", pattern, err)
	}
	return stripAnchors(re.Simplify()), nil
}

func (b *builder) regexTree(re *syntax.Regexp, pattern string, inJSON bool, capStar int) ([]elem, error) {
	rc := &regexConv{b: b, json: inJSON, capStar: capStar}
	seq := rc.conv(re)
	if rc.err != nil {
		return nil, fmt.Errorf("regular expression %q: %v", pattern, rc.err)
	}
	return seq, b.err
}

// stripAnchors removes ^ and $ (and \A, \z) at the start and end: the
// generated string is the whole match, so they hold there.
func stripAnchors(re *syntax.Regexp) *syntax.Regexp {
	isBegin := func(r *syntax.Regexp) bool { return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine }
	isEnd := func(r *syntax.Regexp) bool { return r.Op == syntax.OpEndText || r.Op == syntax.OpEndLine }
	switch re.Op {
	case syntax.OpAlternate:
		c := *re
		c.Sub = nil
		for _, s := range re.Sub {
			c.Sub = append(c.Sub, stripAnchors(s))
		}
		return &c
	case syntax.OpCapture:
		c := *re
		c.Sub = []*syntax.Regexp{stripAnchors(re.Sub[0])}
		return &c
	case syntax.OpConcat:
		subs := re.Sub
		for len(subs) > 0 && isBegin(subs[0]) {
			subs = subs[1:]
		}
		for len(subs) > 0 && isEnd(subs[len(subs)-1]) {
			subs = subs[:len(subs)-1]
		}
		c := *re
		c.Sub = subs
		if len(subs) > 0 {
			c.Sub = append([]*syntax.Regexp{stripAnchors(subs[0])}, subs[1:]...)
			last := len(c.Sub) - 1
			c.Sub[last] = stripAnchors(c.Sub[last])
		}
		return &c
	}
	if isBegin(re) || isEnd(re) {
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	}
	return re
}

type regexConv struct {
	b       *builder
	json    bool
	capStar int // >= 0: unbounded repetition stops after this many more
	err     error
}

func (rc *regexConv) conv(re *syntax.Regexp) []elem {
	b := rc.b
	if rc.err != nil {
		return nil
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return nil
	case syntax.OpLiteral:
		var out []elem
		for _, r := range re.Rune {
			out = append(out, rc.class([]rune{r, r})...)
		}
		return out
	case syntax.OpCharClass:
		return rc.class(re.Rune)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return rc.class([]rune{' ', '~'})
	case syntax.OpCapture:
		return rc.conv(re.Sub[0])
	case syntax.OpConcat:
		var out []elem
		for _, s := range re.Sub {
			out = append(out, rc.conv(s)...)
		}
		return out
	case syntax.OpAlternate:
		var alts [][]elem
		for _, s := range re.Sub {
			alts = append(alts, rc.conv(s))
		}
		return b.alt(alts...)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		if lo > 1000 {
			rc.err = fmt.Errorf("repetition {%d,} is too long", lo)
			return nil
		}
		if hi > lo+maxRepeat {
			hi = lo + maxRepeat
		}
		if hi < 0 && rc.capStar >= 0 {
			hi = lo + rc.capStar
		}
		x := rc.conv(re.Sub[0])
		if len(x) == 0 {
			return nil
		}
		if hi < 0 && regexNullable(re.Sub[0]) {
			hi = lo + 1 // (x*)*: a star of what matches empty would never end
		}
		return b.repeat(x, lo, hi)
	case syntax.OpNoMatch:
		rc.err = fmt.Errorf("matches nothing")
	default:
		rc.err = fmt.Errorf("unsupported %v (anchors only at the ends; no word boundaries)", re.Op)
	}
	return nil
}

func regexNullable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpRepeat:
		return re.Min == 0 || regexNullable(re.Sub[0])
	case syntax.OpPlus, syntax.OpCapture:
		return regexNullable(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !regexNullable(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if regexNullable(s) {
				return true
			}
		}
	}
	return false
}

// class is one character from rune ranges (pairs lo, hi).
func (rc *regexConv) class(ranges []rune) []elem {
	b := rc.b
	var ascii byteSet
	var alts [][]elem
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for c := lo; c <= min(hi, 0x7f); c++ {
			switch {
			case !rc.json:
				ascii.add(byte(c))
			case c == '"' || c == '\\':
				alts = append(alts, b.lit(`\`+string(c)))
			case c >= 0x20 && c != 0x7f:
				ascii.add(byte(c))
			}
		}
		if hi >= 0x80 {
			utf8Ranges(max(lo, 0x80), hi, func(seq [][2]byte) {
				var out []elem
				for _, r := range seq {
					out = append(out, b.set(r[0], r[1])...)
				}
				alts = append(alts, out)
			})
		}
	}
	if ascii != (byteSet{}) {
		alts = append([][]elem{{b.class(ascii)}}, alts...)
	}
	if len(alts) == 0 {
		rc.err = fmt.Errorf("a character class matches no character allowed here")
		return nil
	}
	return b.alt(alts...)
}

// utf8Ranges calls emit with byte-range sequences whose UTF-8 strings are
// exactly the code points lo..hi (surrogates left out).
func utf8Ranges(lo, hi rune, emit func([][2]byte)) {
	if lo > hi {
		return
	}
	if lo <= 0xdfff && hi >= 0xd800 {
		utf8Ranges(lo, 0xd7ff, emit)
		utf8Ranges(0xe000, hi, emit)
		return
	}
	for _, edge := range []rune{0x7f, 0x7ff, 0xffff} {
		if lo <= edge && hi > edge {
			utf8Ranges(lo, edge, emit)
			utf8Ranges(edge+1, hi, emit)
			return
		}
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Ranges(lo, lo|m, emit)
				utf8Ranges((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Ranges(lo, (hi&^m)-1, emit)
				utf8Ranges(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, z [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(z[:], hi)
	seq := make([][2]byte, n)
	for i := range n {
		seq[i] = [2]byte{a[i], z[i]}
	}
	emit(seq)
}

// regexLen is the shortest and longest match of re in characters (hi < 0:
// unbounded), after the repetition caps conv applies.
func regexLen(re *syntax.Regexp, capStar int) (lo, hi int) {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune), len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, 1
	case syntax.OpCapture:
		return regexLen(re.Sub[0], capStar)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			l, h := regexLen(s, capStar)
			lo += l
			if hi >= 0 {
				if h < 0 {
					hi = -1
				} else {
					hi += h
				}
			}
		}
		return lo, hi
	case syntax.OpAlternate:
		lo = -1
		for _, s := range re.Sub {
			l, h := regexLen(s, capStar)
			if lo < 0 || l < lo {
				lo = l
			}
			if hi >= 0 && (h < 0 || h > hi) {
				hi = h
			}
		}
		return max(lo, 0), hi
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		rlo, rhi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			rlo = 1
		case syntax.OpQuest:
			rhi = 1
		case syntax.OpRepeat:
			rlo, rhi = re.Min, re.Max
		}
		if rhi > rlo+maxRepeat {
			rhi = rlo + maxRepeat
		}
		if rhi < 0 && capStar >= 0 {
			rhi = rlo + capStar
		}
		l, h := regexLen(re.Sub[0], capStar)
		if h < 0 || rhi < 0 {
			return l * rlo, -1
		}
		return l * rlo, h * rhi
	}
	return 0, 0
}

// compileECMA compiles a JSON Schema pattern with Go's regexp (RE2): the
// ECMA-262 features RE2 lacks (lookaround, backreferences) are errors.
func compileECMA(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %v", p, err)
	}
	return re, nil
}
