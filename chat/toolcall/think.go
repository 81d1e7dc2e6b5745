package toolcall

import "strings"

// Reasoning split for deepseek_r1 and qwen3: <think>reasoning</think>content.
//
// The block is recognized only at the start of the output (after
// whitespace), or is already open when the prompt opened it; a later
// <think> is content, so an answer that talks about the tags stays intact.
// Only the first </think> closes it. Both parsers split alike; they differ in
// what unclosed reasoning becomes (see Unclosed). vLLM's deepseek_r1 always
// assumes the prompt opened the block; here the caller says so with
// Options.PromptOpenedThink, which keeps a model with thinking switched off
// from having its whole answer taken as reasoning.

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

type thinkState int

const (
	thinkBegin     thinkState = iota // output start; <think> may come
	thinkBeginOpen                   // output start, prompt opened <think>; a repeated <think> is skipped
	thinkIn                          // inside reasoning
	thinkAfter                       // after </think>; leading whitespace dropped
	thinkPlain                       // no reasoning: all content
)

type thinkStage struct {
	state thinkState
	buf   string
	// deferAll: unclosed reasoning becomes content, so reasoning is held in
	// held until </think>, and raw keeps the text consumed since the output
	// began, to be released unsplit if </think> never comes.
	deferAll bool
	raw      strings.Builder
	held     strings.Builder
	// Reasoning is trimmed: leading whitespace is dropped until started,
	// trailing whitespace waits in rPend and is dropped at </think>.
	started bool
	rPend   string
	r, c    strings.Builder // this step's output
}

func newThinkStage(promptOpened, deferAll bool) *thinkStage {
	t := &thinkStage{deferAll: deferAll}
	if promptOpened {
		t.state = thinkBeginOpen
	}
	return t
}

func (t *thinkStage) feed(text string, final bool) (reasoning, content string) {
	t.buf += text
	t.r.Reset()
	t.c.Reset()
	t.run(final)
	return t.r.String(), t.c.String()
}

func (t *thinkStage) run(final bool) {
	for {
		switch t.state {
		case thinkBegin, thinkBeginOpen:
			k := skipWS(t.buf, 0)
			rest := t.buf[k:]
			if strings.HasPrefix(rest, thinkOpen) {
				t.consume(k + len(thinkOpen))
				t.state = thinkIn
				continue
			}
			if (rest == "" || isPartial(rest, thinkOpen)) && !final {
				return
			}
			if t.state == thinkBegin {
				t.state = thinkPlain
			} else {
				t.state = thinkIn
			}
		case thinkPlain:
			t.c.WriteString(t.buf)
			t.buf = ""
			return
		case thinkAfter:
			s := strings.TrimLeft(t.buf, wsChars)
			t.buf = ""
			if s == "" {
				return
			}
			t.c.WriteString(s)
			t.state = thinkPlain
			return
		case thinkIn:
			if i := strings.Index(t.buf, thinkClose); i >= 0 {
				t.reason(t.buf[:i])
				t.buf = t.buf[i+len(thinkClose):]
				t.rPend = ""
				t.r.WriteString(t.held.String())
				t.held.Reset()
				t.raw.Reset()
				t.deferAll = false
				t.state = thinkAfter
				continue
			}
			if final {
				if t.deferAll {
					t.c.WriteString(t.raw.String())
					t.c.WriteString(t.buf)
					t.raw.Reset()
					t.held.Reset()
				} else {
					t.reason(t.buf)
				}
				t.buf = ""
				t.rPend = ""
				t.state = thinkPlain
				return
			}
			n := len(t.buf) - partialSuffix(t.buf, thinkClose)
			t.reason(t.buf[:n])
			t.consume(n)
			return
		}
	}
}

// consume drops the first n bytes of buf, remembering them in raw when they
// may yet have to be released unsplit.
func (t *thinkStage) consume(n int) {
	if t.deferAll {
		t.raw.WriteString(t.buf[:n])
	}
	t.buf = t.buf[n:]
}

func (t *thinkStage) reason(s string) {
	if !t.started {
		s = strings.TrimLeft(s, wsChars)
		if s == "" {
			return
		}
		t.started = true
	}
	s = t.rPend + s
	body := strings.TrimRight(s, wsChars)
	t.rPend = s[len(body):]
	if t.deferAll {
		t.held.WriteString(body)
	} else {
		t.r.WriteString(body)
	}
}
