package grammar

import (
	"bytes"
	"fmt"
)

// Lazy is a constraint that leaves the output free until a trigger (the
// opening of a tool call, such as "<tool_call>") appears, then holds the
// rest to a grammar whose sentences start with the trigger: llama.cpp's
// lazy grammars, used for tool_choice "auto". While free, only tokens
// that would complete the trigger with text the grammar refuses are
// masked. Text inside a skipped span (the reasoning, between "<think>"
// and "</think>") never triggers; inside it nothing is masked, so a single
// token that closes the span and completes the trigger with text the
// grammar refuses makes Accept fail. Not safe for concurrent use.
type Lazy struct {
	g       *Grammar
	v       *Vocab
	trig    *triggerMasks
	opt     LazyOptions
	recent  []byte // the free text's last bytes, enough to find a marker
	inSkip  bool
	matcher *Matcher // set once triggered
}

// LazyOptions configure a Lazy constraint.
type LazyOptions struct {
	Trigger   string // text that switches the grammar on; the grammar's sentences start with it
	SkipOpen  string // text that opens a span where the trigger is ignored ("" for none)
	SkipClose string // text that closes it
	InSkip    bool   // the output starts inside the span (the prompt opened it)
}

// NewLazy is a lazy constraint of g over v.
func NewLazy(g *Grammar, v *Vocab, opt LazyOptions) (*Lazy, error) {
	if opt.Trigger == "" {
		return nil, fmt.Errorf("grammar: a lazy grammar needs a trigger")
	}
	if m := NewMatcher(g, v); !m.AcceptBytes([]byte(opt.Trigger)) {
		return nil, fmt.Errorf("grammar: the lazy grammar does not start with its trigger %q", opt.Trigger)
	}
	return &Lazy{g: g, v: v, trig: g.triggerMasks(v, opt.Trigger), opt: opt, inSkip: opt.InSkip}, nil
}

// Triggered reports whether the grammar has switched on.
func (l *Lazy) Triggered() bool { return l.matcher != nil }

// Mask sets the logits of tokens that may not come next to -inf.
func (l *Lazy) Mask(logits []float32) {
	if l.matcher != nil {
		l.matcher.Mask(logits)
		return
	}
	if l.inSkip {
		return
	}
	for _, id := range l.trig.banned[overlap(l.recent, l.opt.Trigger)] {
		if int(id) < len(logits) {
			logits[id] = negInf
		}
	}
}

// Accept advances past token id.
func (l *Lazy) Accept(id int) error {
	if l.matcher != nil {
		return l.matcher.Accept(id)
	}
	if id < 0 || id >= l.v.size {
		return fmt.Errorf("grammar: token %d is outside the vocabulary", id)
	}
	keep := max(len(l.opt.Trigger), len(l.opt.SkipOpen), len(l.opt.SkipClose))
	for i, c := range l.v.tokens[id] {
		l.recent = append(l.recent, c)
		switch {
		case l.inSkip:
			if l.opt.SkipClose != "" && bytes.HasSuffix(l.recent, []byte(l.opt.SkipClose)) {
				l.inSkip, l.recent = false, l.recent[:0]
			}
		case l.opt.SkipOpen != "" && bytes.HasSuffix(l.recent, []byte(l.opt.SkipOpen)):
			l.inSkip, l.recent = true, l.recent[:0]
		case bytes.HasSuffix(l.recent, []byte(l.opt.Trigger)):
			return l.trigger(l.v.tokens[id][i+1:])
		}
		if len(l.recent) > 2*keep {
			l.recent = append(l.recent[:0], l.recent[len(l.recent)-keep:]...)
		}
	}
	return nil
}

// trigger switches the grammar on: it consumes the trigger and the rest
// of the token that completed it.
func (l *Lazy) trigger(rest []byte) error {
	m := NewMatcher(l.g, l.v)
	text := append([]byte(l.opt.Trigger), rest...)
	if !m.AcceptBytes(text) {
		return fmt.Errorf("grammar: %q after the trigger does not fit the grammar", rest)
	}
	l.matcher = m
	return nil
}

// overlap is the length of the longest suffix of text that is a proper
// prefix of trigger.
func overlap(text []byte, trigger string) int {
	for k := min(len(text), len(trigger)-1); k > 0; k-- {
		if bytes.HasSuffix(text, []byte(trigger[:k])) {
			return k
		}
	}
	return 0
}

// triggerMasks holds, per overlap k (0 to len(trigger)-1), the tokens
// that complete the trigger after its first k bytes and go on with text
// the grammar refuses.
type triggerMasks struct {
	banned [][]int32
}

type triggerKey struct {
	v       *Vocab
	trigger string
}

// triggerMasks computes, once per vocabulary and trigger, the masks of
// a lazy grammar's free text.
func (g *Grammar) triggerMasks(v *Vocab, trigger string) *triggerMasks {
	g.lazyMu.Lock()
	defer g.lazyMu.Unlock()
	if tm := g.lazy[triggerKey{v, trigger}]; tm != nil {
		return tm
	}
	tm := &triggerMasks{banned: make([][]int32, len(trigger))}
	var buf []byte
	last := trigger[len(trigger)-1]
	for k := range trigger {
		for _, id := range v.order {
			if bytes.IndexByte(v.tokens[id], last) < 0 {
				continue // cannot complete the trigger
			}
			buf = append(append(buf[:0], trigger[:k]...), v.tokens[id]...)
			i := bytes.Index(buf, []byte(trigger))
			if i < 0 {
				continue
			}
			if !g.startsWith(buf[i:]) {
				tm.banned[k] = append(tm.banned[k], id)
			}
		}
	}
	if g.lazy == nil {
		g.lazy = map[triggerKey]*triggerMasks{}
	}
	g.lazy[triggerKey{v, trigger}] = tm
	return tm
}

// startsWith reports whether text is a prefix of a sentence of g.
func (g *Grammar) startsWith(text []byte) bool {
	a := &arena{g: g}
	var cur, next state
	a.start(&cur)
	for _, c := range text {
		next.reset()
		a.advance(&cur, c, &next)
		if next.empty() {
			return false
		}
		cur, next = next, cur
	}
	return true
}
