package toolcall

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Spark-X2.5 calls (shared/docs/spark2_5.md, "Tool calls"):
//
//	<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>
//
// Values are raw text, typed by the declared JSON schema of the parameter.

const (
	argKeyOpen    = "<arg_key>"
	argKeyClose   = "</arg_key>"
	argValueOpen  = "<arg_value>"
	argValueClose = "</arg_value>"
)

// paramTypes maps tool name -> parameter name -> declared JSON-schema types.
type paramTypes map[string]map[string][]string

// newSparkParser returns the block parser for spark25, with the declared
// parameter types looked up once per request.
func newSparkParser(tools []Tool) func(string, bool) (string, string, bool) {
	types := make(paramTypes, len(tools))
	for _, tool := range tools {
		types[tool.Name] = schemaTypes(tool.Parameters)
	}
	return func(inner string, closed bool) (string, string, bool) {
		if !closed {
			// The spec holds an unclosed call back while streaming; at the
			// end it is released as content, like vLLM does.
			return "", "", false
		}
		return parseSpark(inner, types)
	}
}

// schemaTypes reads the top-level property types of a parameters schema. A
// schema that does not decode gives no types: every value then goes through
// the untyped rule (JSON if it parses, else a string).
func schemaTypes(schema json.RawMessage) map[string][]string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make(map[string][]string, len(s.Properties))
	for name, p := range s.Properties {
		var one string
		var many []string
		switch {
		case json.Unmarshal(p.Type, &one) == nil:
			out[name] = []string{one}
		case json.Unmarshal(p.Type, &many) == nil:
			out[name] = many
		}
	}
	return out
}

func parseSpark(inner string, types paramTypes) (name, args string, ok bool) {
	k := strings.Index(inner, argKeyOpen)
	if k < 0 {
		k = len(inner)
	}
	name = trimWS(inner[:k])
	if name == "" {
		return "", "", false
	}
	props := types[name]

	// Keys keep their first position and take their last value, as a Python
	// dict built pair by pair would.
	var keys []string
	vals := map[string]string{}
	rest := inner[k:]
	for {
		a := strings.Index(rest, argKeyOpen)
		if a < 0 {
			break
		}
		rest = rest[a+len(argKeyOpen):]
		b := strings.Index(rest, argKeyClose)
		if b < 0 {
			break
		}
		key := trimWS(rest[:b])
		rest = rest[b+len(argKeyClose):]
		// Only whitespace may separate a key from its value (GLM-style
		// templates put a newline there); otherwise the key has no value.
		v := rest[skipWS(rest, 0):]
		if !strings.HasPrefix(v, argValueOpen) {
			continue
		}
		v = v[len(argValueOpen):]
		c := strings.Index(v, argValueClose)
		if c < 0 {
			break
		}
		val := v[:c]
		rest = v[c+len(argValueClose):]
		if key == "" {
			continue
		}
		if _, seen := vals[key]; !seen {
			keys = append(keys, key)
		}
		vals[key] = coerce(val, props[key])
	}

	b := []byte{'{'}
	for i, key := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, key)
		b = append(b, ':')
		b = append(b, vals[key]...)
	}
	b = append(b, '}')
	return name, string(b), true
}

// coerce turns a raw argument value into JSON text by the declared types,
// tried in order. The value itself is never trimmed for strings; the
// numeric, boolean and JSON readings ignore surrounding whitespace, as
// Python's int(), float() and json.loads() do.
func coerce(val string, types []string) string {
	t := trimWS(val)
	if strings.EqualFold(t, "null") {
		return "null"
	}
	for _, typ := range types {
		switch strings.ToLower(typ) {
		case "string", "str", "text":
			return string(appendString(nil, val))
		case "integer", "int":
			if s, ok := normInt(t); ok {
				return s
			}
		case "number", "float":
			if s, ok := normNumber(t); ok {
				return s
			}
		case "boolean", "bool":
			switch strings.ToLower(t) {
			case "true", "1":
				return "true"
			case "false", "0":
				return "false"
			}
		default: // object, array, null, or unknown: JSON
			if s, ok := compactJSON(t); ok {
				return s
			}
		}
	}
	if s, ok := compactJSON(t); ok {
		return s
	}
	return string(appendString(nil, val))
}

// normInt reads an optionally signed decimal integer of any size (Python
// ints are unbounded) and writes it canonically: "+007" -> "7".
func normInt(s string) (string, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0", true
	}
	if neg {
		s = "-" + s
	}
	return s, true
}

// normNumber reads a decimal float and writes it as an integer when it is
// integral (the spec's "float (int if integral)"), else in Python's repr
// style. Infinities and NaN have no JSON form and fail.
func normNumber(s string) (string, bool) {
	digits := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
		default:
			return "", false // rules out inf, nan, hex and underscores
		}
	}
	if !digits {
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		if f == 0 {
			return "0", true // not "-0"
		}
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	return pyFloat(f), true
}

// pyFloat formats like Python's repr(float): positional for exponents in
// [-4, 16), else shortest scientific. Go's 'g' switches at a different
// exponent, which would print 1234567.5 as 1.2345675e+06.
func pyFloat(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp >= -4 && exp < 16 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return e
}
