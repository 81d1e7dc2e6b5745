package toolcall

import (
	"encoding/json"
	"strings"
)

// mistral: [TOOL_CALLS] then either a JSON array of {"name","arguments"}
// (tokenizer v3; a lone object is accepted too) or, from tokenizer v11 on,
// NAME[ARGS]{...} per call, each call with its own [TOOL_CALLS]. Some
// templates put [CALL_ID]id between the name and [ARGS]; that id is
// replaced by a fresh one like every other.

const (
	mistralMarker = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"
	maxNameLen    = 256 // a longer "name" is prose, not a call; bounds hold-back
)

type mistralFormat struct{}

func (mistralFormat) scan(buf string, final bool, emit func(segment)) int {
	i := strings.Index(buf, mistralMarker)
	if i < 0 {
		n := len(buf)
		if !final {
			n -= partialSuffix(buf, mistralMarker)
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
	// What follows is not a call: release the marker as text and scan on
	// after it, so the rest is still searched for real calls.
	notCall := func() int {
		emit(textSeg(mistralMarker))
		return len(mistralMarker)
	}
	// wait is the answer when buf ended before we could tell.
	wait := func() int {
		if final {
			return notCall()
		}
		return 0
	}
	k := skipWS(buf, len(mistralMarker))
	if k == len(buf) {
		return wait()
	}
	if c := buf[k]; c == '[' || c == '{' {
		n := valueEnd(buf[k:])
		if n < 0 {
			return wait()
		}
		calls, ok := mistralJSON(buf[k : k+n])
		if !ok {
			return notCall()
		}
		for _, c := range calls {
			emit(c)
		}
		return k + n
	}

	j := k
	for j < len(buf) && j-k <= maxNameLen && isNameByte(buf[j]) {
		j++
	}
	if j-k > maxNameLen || j == k {
		return notCall()
	}
	if j == len(buf) {
		return wait()
	}
	name := buf[k:j]
	rest := buf[j:]
	if strings.HasPrefix(rest, mistralCallID) {
		j += len(mistralCallID)
		for j < len(buf) && j-k <= 2*maxNameLen && isNameByte(buf[j]) {
			j++
		}
		if j == len(buf) {
			return wait()
		}
		rest = buf[j:]
	} else if isPartial(rest, mistralCallID) {
		return wait()
	}
	if !strings.HasPrefix(rest, mistralArgs) {
		if isPartial(rest, mistralArgs) {
			return wait()
		}
		return notCall()
	}
	a := skipWS(buf, j+len(mistralArgs))
	if a == len(buf) {
		return wait()
	}
	if buf[a] != '{' {
		return notCall()
	}
	n := valueEnd(buf[a:])
	if n < 0 {
		return wait()
	}
	args, ok := argsJSON(json.RawMessage(buf[a : a+n]))
	if !ok {
		return notCall()
	}
	emit(callSeg(name, args))
	return a + n
}

// mistralJSON reads the v3 payload: an array of call objects, or one object.
// One bad element spoils the lot, as in vLLM.
func mistralJSON(v string) ([]segment, bool) {
	var raws []rawCall
	if v[0] == '{' {
		raws = make([]rawCall, 1)
		if json.Unmarshal([]byte(v), &raws[0]) != nil {
			return nil, false
		}
	} else if json.Unmarshal([]byte(v), &raws) != nil {
		return nil, false
	}
	segs := make([]segment, 0, len(raws))
	for _, rc := range raws {
		name, args, ok := rc.call(false)
		if !ok {
			return nil, false
		}
		segs = append(segs, callSeg(name, args))
	}
	return segs, true
}

// isNameByte accepts the bytes of OpenAI function names plus '.' and ':'
// (namespaced tools); anything else, like a space, means prose.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':'
}
