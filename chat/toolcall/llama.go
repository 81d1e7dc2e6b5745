package toolcall

// llama3_json: Llama 3.1/3.2 answer a tool call with the whole output being
// {"name": ..., "parameters": {...}} (or "arguments"), optionally after
// <|python_tag|>, several separated by ';'. Output that does not start that
// way is plain text.

const pythonTag = "<|python_tag|>"

type llamaMode int

const (
	llamaStart llamaMode = iota // nothing decided yet
	llamaCalls                  // at least one call seen
	llamaText                   // everything left is content
)

type llamaFormat struct{ mode llamaMode }

func (f *llamaFormat) scan(buf string, final bool, emit func(segment)) int {
	switch f.mode {
	case llamaText:
		emit(textSeg(buf))
		return len(buf)
	case llamaStart:
		return f.start(buf, final, emit)
	}
	// After a call: whitespace, an optional ';', then the next object.
	// Anything else ends the calls; vLLM would call the whole output text
	// then, but calls already streamed cannot be taken back, so the rest is
	// content instead.
	k := skipWS(buf, 0)
	if k < len(buf) && buf[k] == ';' {
		k = skipWS(buf, k+1)
	}
	if k == len(buf) {
		if !final {
			return 0
		}
		return len(buf) // trailing whitespace or a dangling ';'
	}
	if buf[k] != '{' {
		return f.toText(buf, emit)
	}
	n := valueEnd(buf[k:])
	if n < 0 {
		if !final {
			return 0
		}
		return f.toText(buf, emit)
	}
	name, args, ok := decodeCall(buf[k:k+n], true)
	if !ok {
		return f.toText(buf, emit)
	}
	emit(callSeg(name, args))
	return k + n
}

// start decides whether the output is calls. Until then nothing is released,
// so a failed first call gives back the output verbatim, tag included.
func (f *llamaFormat) start(buf string, final bool, emit func(segment)) int {
	k := skipWS(buf, 0)
	rest := buf[k:]
	switch {
	case len(rest) >= len(pythonTag) && rest[:len(pythonTag)] == pythonTag:
		k = skipWS(buf, k+len(pythonTag))
	case rest == "" || isPartial(rest, pythonTag):
		if !final {
			return 0
		}
		return f.toText(buf, emit)
	}
	if k == len(buf) {
		if !final {
			return 0
		}
		return f.toText(buf, emit)
	}
	if buf[k] != '{' {
		return f.toText(buf, emit)
	}
	n := valueEnd(buf[k:])
	if n < 0 {
		if !final {
			return 0
		}
		return f.toText(buf, emit)
	}
	name, args, ok := decodeCall(buf[k:k+n], true)
	if !ok {
		return f.toText(buf, emit)
	}
	f.mode = llamaCalls
	emit(callSeg(name, args))
	return k + n
}

func (f *llamaFormat) toText(buf string, emit func(segment)) int {
	f.mode = llamaText
	emit(textSeg(buf))
	return len(buf)
}
