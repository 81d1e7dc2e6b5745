package toolcall

import "strings"

// segment is a piece of tool-parser input: text, or a call.
type segment struct {
	text       string
	call       bool
	name, args string
}

func textSeg(s string) segment { return segment{text: s} }

func callSeg(name, args string) segment { return segment{call: true, name: name, args: args} }

// format is one tool-call syntax. scan consumes a prefix of buf (the input not
// consumed yet), emitting the segments it makes, and returns its length; 0
// means it cannot decide yet. With final set it must consume something.
// Decisions may depend only on the bytes consumed, never on where buf ends,
// which is what makes streaming output equal whole-text output.
type format interface {
	scan(buf string, final bool, emit func(segment)) int
}

// toolStage runs a format over the content stream, assigns ids, drops calls
// to undeclared tools and tidies the whitespace that calls leave behind.
type toolStage struct {
	f        format
	declared map[string]bool // nil when the request declared no tools
	newID    func() string
	buf      string
	// Whitespace around a call collapses to the run before it (else the run
	// after it) and is dropped before the first text or after the last, so
	// "Sure.\n<call>\n" gives "Sure." and "A <call> B" gives "A B". pendWS is
	// trailing whitespace not yet released, postWS leads the text after a
	// call, emitted says non-whitespace text was released.
	pendWS    string
	postWS    string
	afterCall bool
	emitted   bool
	out       strings.Builder
	calls     []Call
}

func newToolStage(f format, tools []Tool, newID func() string) *toolStage {
	t := &toolStage{f: f, newID: newID}
	if len(tools) > 0 {
		t.declared = make(map[string]bool, len(tools))
		for _, tool := range tools {
			t.declared[tool.Name] = true
		}
	}
	return t
}

func (t *toolStage) feed(text string, final bool) (string, []Call) {
	t.buf += text
	t.out.Reset()
	t.calls = nil
	for len(t.buf) > 0 {
		n := t.f.scan(t.buf, final, t.emit)
		if n == 0 {
			if !final {
				break
			}
			// A format must consume everything at the end; this only
			// guards against a bug looping forever.
			t.emit(textSeg(t.buf))
			n = len(t.buf)
		}
		t.buf = t.buf[n:]
	}
	if final && !t.afterCall {
		t.out.WriteString(t.pendWS)
	}
	return t.out.String(), t.calls
}

func (t *toolStage) emit(s segment) {
	if s.call {
		if !t.emitted {
			t.pendWS = ""
		}
		t.postWS = ""
		t.afterCall = true
		if t.declared != nil && !t.declared[s.name] {
			return
		}
		t.calls = append(t.calls, Call{ID: t.newID(), Name: s.name, Arguments: s.args})
		return
	}
	txt := s.text
	if t.afterCall {
		trimmed := strings.TrimLeft(txt, wsChars)
		t.postWS += txt[:len(txt)-len(trimmed)]
		if trimmed == "" {
			return
		}
		if t.pendWS == "" && t.emitted {
			t.pendWS = t.postWS
		}
		t.postWS = ""
		t.afterCall = false
		txt = trimmed
	}
	txt = t.pendWS + txt
	body := strings.TrimRight(txt, wsChars)
	t.pendWS = txt[len(body):]
	if body != "" {
		t.emitted = true
		t.out.WriteString(body)
	}
}

// tagFormat is a call wrapped in open and close tags (spark25, hermes).
type tagFormat struct {
	open, close string
	// parse reads the text between the tags; closed is false for a block
	// still open at the end of the output.
	parse func(inner string, closed bool) (name, args string, ok bool)
}

func (f *tagFormat) scan(buf string, final bool, emit func(segment)) int {
	i := strings.Index(buf, f.open)
	if i < 0 {
		n := len(buf)
		if !final {
			n -= partialSuffix(buf, f.open)
		}
		if n > 0 {
			emit(textSeg(buf[:n]))
		}
		return n
	}
	if i > 0 {
		emit(textSeg(buf[:i]))
		return i
	}
	inner := buf[len(f.open):]
	j := strings.Index(inner, f.close)
	if j < 0 {
		if !final {
			return 0
		}
		if name, args, ok := f.parse(inner, false); ok {
			emit(callSeg(name, args))
		} else {
			emit(textSeg(buf))
		}
		return len(buf)
	}
	end := len(f.open) + j + len(f.close)
	if name, args, ok := f.parse(inner[:j], true); ok {
		emit(callSeg(name, args))
	} else {
		emit(textSeg(buf[:end]))
	}
	return end
}

// parseHermes reads {"name": ..., "arguments": {...}}. An unclosed block
// still counts when its JSON is complete, as vLLM's hermes regex allows
// (generation can stop right before </tool_call>).
func parseHermes(inner string, closed bool) (name, args string, ok bool) {
	return decodeCall(trimWS(inner), false)
}
