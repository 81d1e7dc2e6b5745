package chat

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// Python semantics for template values: str(), repr(), json.dumps, ==.
// transformers renders with Python objects, so output that stringifies a
// value must follow Python, not the library's Go-flavoured printing.

// pyStr is Python's str(v) as jinja2 prints it; undefined prints empty.
func pyStr(v jinja.Value) string {
	if v.IsUndefined() {
		return ""
	}
	if s, ok := asString(v); ok {
		return s
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v).
func pyRepr(v jinja.Value) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v jinja.Value, depth int) {
	if depth > maxDepth {
		// Python prints a self-containing value as "[...]"; a namespace
		// can hold itself.
		b.WriteString("...")
		return
	}
	switch {
	case v.IsUndefined():
		// jinja2's Undefined has an empty str but repr "Undefined".
		b.WriteString("Undefined")
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloat(v.AsFloat(), false))
	case v.IsString():
		writeStrRepr(b, v.AsString())
	case v.IsList():
		kind := kindOf(v)
		items := v.AsList().Items
		switch kind {
		case "Markup":
			b.WriteString("Markup(")
			writeStrRepr(b, items[0].AsString())
			b.WriteByte(')')
			return
		case "tuple":
			b.WriteByte('(')
			for i, it := range items {
				if i > 0 {
					b.WriteString(", ")
				}
				writeRepr(b, it, depth+1)
			}
			if len(items) == 1 {
				b.WriteByte(',')
			}
			b.WriteByte(')')
			return
		case "range":
			writeRange(b, items)
			return
		case "dict_items", "dict_keys", "dict_values":
			b.WriteString(kind + "(")
			defer b.WriteByte(')')
		case "":
		default:
			// CPython adds an address; no template can depend on it.
			fmt.Fprintf(b, "<%s object>", kind)
			return
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(", ")
			}
			if kind == "dict_items" {
				// The pairs are tuples.
				p := it.AsList().Items
				b.WriteByte('(')
				writeRepr(b, p[0], depth+1)
				b.WriteString(", ")
				writeRepr(b, p[1], depth+1)
				b.WriteByte(')')
				continue
			}
			writeRepr(b, it, depth+1)
		}
		b.WriteByte(']')
	case v.IsDict():
		if kindOf(v) == "Namespace" {
			b.WriteString("<Namespace ")
			defer b.WriteByte('>')
		}
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, keyValue(k), depth+1)
			b.WriteString(": ")
			writeRepr(b, d.Data[k], depth+1)
		}
		b.WriteByte('}')
	case v.IsCallable():
		fmt.Fprintf(b, "<function %s>", v.AsCallable().Name)
	}
}

// writeRange prints range(start, stop[, step]) from the range's items.
func writeRange(b *strings.Builder, items []jinja.Value) {
	start, step := int64(0), int64(1)
	if len(items) > 0 {
		start = items[0].AsInt()
	}
	if len(items) > 1 {
		step = items[1].AsInt() - start
	}
	stop := start + int64(len(items))*step
	if step == 1 {
		fmt.Fprintf(b, "range(%d, %d)", start, stop)
	} else {
		fmt.Fprintf(b, "range(%d, %d, %d)", start, stop, step)
	}
}

// writeStrRepr quotes s like Python's str.__repr__: single quotes unless
// the text holds a single quote and no double quote.
func writeStrRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x80 || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
}

// pyFloat is Python's repr(float), or json.dumps's spelling when json is
// set (which differs only for the non-finite values).
func pyFloat(f float64, json bool) string {
	switch {
	case math.IsNaN(f):
		if json {
			return "NaN"
		}
		return "nan"
	case math.IsInf(f, 1):
		if json {
			return "Infinity"
		}
		return "inf"
	case math.IsInf(f, -1):
		if json {
			return "-Infinity"
		}
		return "-inf"
	}
	// Shortest round-trip digits, then Python's layout: positional for
	// 1e-4 <= |f| < 1e16 (always with a fractional part), else exponent
	// with at least two digits.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp >= -4 && exp < 16 {
		point := exp + 1 // digits before the decimal point
		switch {
		case point <= 0:
			out = "0." + strings.Repeat("0", -point) + digits
		case point >= len(digits):
			out = digits + strings.Repeat("0", point-len(digits)) + ".0"
		default:
			out = digits[:point] + "." + digits[point:]
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign = "-"
			exp = -exp
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// jsonOptions are the json.dumps arguments transformers' tojson exposes.
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: single line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// pyJSON is Python's json.dumps(v, ...) for template values.
func pyJSON(v jinja.Value, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v jinja.Value, o jsonOptions, depth int) error {
	if depth > maxDepth {
		// Python reports a circular reference; a namespace can hold itself.
		return fmt.Errorf("ValueError: Circular reference detected")
	}
	newline := func(d int) {
		if o.indent != nil {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(*o.indent, d))
		}
	}
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloat(v.AsFloat(), true))
	case v.IsString():
		writeJSONString(b, v.AsString(), o.ensureASCII)
	case isMarkup(v):
		s, _ := asString(v)
		writeJSONString(b, s, o.ensureASCII)
	case v.IsList():
		if k := kindOf(v); isLazy(k) {
			return fmt.Errorf("TypeError: Object of type %s is not JSON serializable", k)
		}
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			if err := writeJSON(b, it, o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte(']')
	case v.IsDict():
		if kindOf(v) == "Namespace" {
			return fmt.Errorf("TypeError: Object of type Namespace is not JSON serializable")
		}
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := d.Keys
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			slices.Sort(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			writeJSONString(b, jsonKey(k), o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(b, d.Data[k], o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("TypeError: Object of type %s is not JSON serializable", pyTypeName(v))
	}
	return nil
}

// jsonKey spells a dict key as json.dumps does: non-string keys become
// their JSON text.
func jsonKey(k string) string {
	v := keyValue(k)
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsNone():
		return "null"
	case v.IsFloat():
		return pyFloat(v.AsFloat(), true)
	}
	return pyRepr(v)
}

// writeJSONString escapes like json.dumps: the short escapes, \u00XX for
// other controls, and with ensure_ascii every non-ASCII rune as \uXXXX
// (surrogate pairs above the BMP).
func writeJSONString(b *strings.Builder, s string, ascii bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || ascii && r == 0x7f:
				fmt.Fprintf(b, `\u%04x`, r)
			case ascii && r > 0x7f:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyTypeName names v's Python type, for error messages.
func pyTypeName(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "Undefined"
	case v.IsNone():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		if k := kindOf(v); k != "" {
			return k
		}
		return "list"
	case v.IsDict():
		if k := kindOf(v); k != "" {
			return k
		}
		return "dict"
	}
	return "function"
}

// pyEqual is Python's == between template values: numbers compare by
// value across int, float and bool; containers compare element-wise.
func pyEqual(a, b jinja.Value) bool {
	return pyEqualDepth(a, b, 0)
}

func pyEqualDepth(a, b jinja.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	a, b = plain(a), plain(b)
	if an, ok := pyNumber(a); ok {
		if bn, ok := pyNumber(b); ok {
			return an == bn
		}
		return false
	}
	switch {
	case a.IsUndefined() || b.IsUndefined():
		// jinja2's Undefined equals only another Undefined.
		return a.IsUndefined() && b.IsUndefined()
	case a.IsNone():
		return b.IsNone()
	case a.IsString():
		return b.IsString() && a.AsString() == b.AsString()
	case a.IsList():
		if !b.IsList() || a.AsList().Len() != b.AsList().Len() || (kindOf(a) == "tuple") != (kindOf(b) == "tuple") {
			return false
		}
		for i, it := range a.AsList().Items {
			if !pyEqualDepth(it, b.AsList().Items[i], depth+1) {
				return false
			}
		}
		return true
	case a.IsDict():
		if !b.IsDict() || a.AsDict().Len() != b.AsDict().Len() {
			return false
		}
		for _, k := range a.AsDict().Keys {
			bv, ok := b.AsDict().Get(k)
			if !ok || !pyEqualDepth(a.AsDict().Data[k], bv, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// pyNumber returns the numeric value of an int, float or bool.
func pyNumber(v jinja.Value) (float64, bool) {
	switch {
	case v.IsInt():
		return float64(v.AsInt()), true
	case v.IsFloat():
		return v.AsFloat(), true
	case v.IsBool():
		if v.AsBool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// pyLess is Python's < for the types that order; it errors like Python
// for mixed types.
func pyLess(a, b jinja.Value) (bool, error) {
	a, b = plain(a), plain(b)
	if an, ok := pyNumber(a); ok {
		if bn, ok := pyNumber(b); ok {
			return an < bn, nil
		}
	}
	if a.IsString() && b.IsString() {
		return a.AsString() < b.AsString(), nil
	}
	if a.IsList() && b.IsList() {
		x, y := a.AsList().Items, b.AsList().Items
		for i := 0; i < len(x) && i < len(y); i++ {
			if pyEqual(x[i], y[i]) {
				continue
			}
			return pyLess(x[i], y[i])
		}
		return len(x) < len(y), nil
	}
	return false, fmt.Errorf("TypeError: '<' not supported between instances of '%s' and '%s'", pyTypeName(a), pyTypeName(b))
}

// pyContains is Python's "item in container".
func pyContains(container, item jinja.Value) (bool, error) {
	container, item = plain(container), plain(item)
	switch {
	case container.IsString():
		if !item.IsString() {
			return false, fmt.Errorf("TypeError: 'in <string>' requires string as left operand, not %s", pyTypeName(item))
		}
		return strings.Contains(container.AsString(), item.AsString()), nil
	case container.IsList():
		for _, it := range container.AsList().Items {
			if pyEqual(it, item) {
				return true, nil
			}
		}
		return false, nil
	case container.IsDict():
		_, ok := dictGet(container.AsDict(), item)
		return ok, nil
	case container.IsUndefined():
		return false, nil
	}
	return false, fmt.Errorf("TypeError: argument of type '%s' is not iterable", pyTypeName(container))
}

// maxDepth bounds recursion through nested values. Python's own limit is
// about 1000 frames; values decoded from requests are capped below this.
const maxDepth = 1000

// pyIsSpace reports Python's str.isspace for one rune.
func pyIsSpace(r rune) bool {
	switch r {
	case 0x1c, 0x1d, 0x1e, 0x1f, 0x85:
		return true
	}
	return unicode.IsSpace(r)
}
