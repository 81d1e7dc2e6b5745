package toolcall

import (
	"encoding/json"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string literal. Unlike encoding/json it
// leaves <, > and & alone and never escapes non-ASCII, so arguments read the
// way the model wrote them (Python's json.dumps(ensure_ascii=False), which
// vLLM uses); invalid UTF-8 becomes U+FFFD so the result is always valid JSON.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// compactJSON re-serializes the JSON text v without insignificant
// whitespace, keeping object keys in their original order (decoding into a
// map would lose it) and numbers exactly as written. String escapes are
// normalized through appendString so "\u00e9" and "é" come out the same. ok
// is false when v is not a single valid JSON value.
func compactJSON(v string) (out string, ok bool) {
	if !json.Valid([]byte(v)) {
		return "", false
	}
	dst := make([]byte, 0, len(v))
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			j := stringEnd(v, i)
			var s string
			if j < 0 || json.Unmarshal([]byte(v[i:j]), &s) != nil {
				return "", false // unreachable after json.Valid
			}
			dst = appendString(dst, s)
			i = j
		default:
			dst = append(dst, c)
			i++
		}
	}
	return string(dst), true
}

// stringEnd returns the index just past the JSON string literal that starts
// at s[i] == '"', or -1 if it is not terminated within s.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the length of the bracketed JSON value ('{...}' or
// '[...]') at the start of s, or -1 when s ends before the brackets balance.
// It only balances brackets outside strings; callers validate the value, so
// a malformed one is found out then. This lets a streaming parser wait for
// exactly the end of an object without trying to decode every prefix.
func valueEnd(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			j := stringEnd(s, i)
			if j < 0 {
				return -1
			}
			i = j - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// rawCall is the {"name": ..., "arguments": {...}} object shared by the
// hermes, llama3_json and mistral formats. Raw messages keep the argument
// text (and so its key order) untouched until compactJSON.
type rawCall struct {
	Name       *string         `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

// decodeCall reads one call object. needArgs demands an "arguments" or
// "parameters" member: llama3_json output is otherwise plain JSON, and a
// bare {"name": ...} answer must stay content there.
func decodeCall(v string, needArgs bool) (name, args string, ok bool) {
	var rc rawCall
	if json.Unmarshal([]byte(v), &rc) != nil {
		return "", "", false
	}
	return rc.call(needArgs)
}

func (rc rawCall) call(needArgs bool) (name, args string, ok bool) {
	if rc.Name == nil || *rc.Name == "" {
		return "", "", false
	}
	raw := rc.Arguments
	if raw == nil {
		raw = rc.Parameters
	}
	if raw == nil {
		if needArgs {
			return "", "", false
		}
		return *rc.Name, "{}", true
	}
	args, ok = argsJSON(raw)
	return *rc.Name, args, ok
}

// argsJSON turns an "arguments" value into OpenAI's arguments text: an
// object is compacted; null means no arguments; a string holding a JSON
// object (some models double-encode) is unwrapped. Anything else is refused,
// since OpenAI clients expect arguments to decode to an object.
func argsJSON(raw json.RawMessage) (string, bool) {
	v := trimWS(string(raw))
	switch {
	case v == "null":
		return "{}", true
	case len(v) > 0 && v[0] == '"':
		var s string
		if json.Unmarshal([]byte(v), &s) != nil {
			return "", false
		}
		s = trimWS(s)
		if s == "" {
			return "{}", true
		}
		v = s
	}
	if len(v) == 0 || v[0] != '{' {
		return "", false
	}
	return compactJSON(v)
}
