package grammar

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// chars is one character inside a JSON string: printable ASCII but quote
// and backslash, a well-formed UTF-8 sequence, or a short escape (\u
// escapes are left out: a subset).
func (c *conv) char() []elem {
	if c.chars != nil {
		return c.chars
	}
	b := c.b
	var ascii byteSet
	ascii.addRange(0x20, 0x7e)
	ascii[0] &^= 1 << '"'
	ascii[1] &^= 1 << ('\\' - 64)
	alts := [][]elem{{b.class(ascii)}}
	utf8Ranges(0x80, 0x10ffff, func(seq [][2]byte) {
		var out []elem
		for _, r := range seq {
			out = append(out, b.set(r[0], r[1])...)
		}
		alts = append(alts, out)
	})
	var esc byteSet
	for _, e := range []byte(`"\/bfnrt`) {
		esc.add(e)
	}
	alts = append(alts, cat(b.lit(`\`), []elem{b.class(esc)}))
	c.chars = []elem{{kRef, b.rule(alts)}}
	return c.chars
}

// stringOf is a JSON string of lo to hi (< 0: any number of) characters.
func (c *conv) stringOf(lo, hi int) []elem {
	return cat(c.b.lit(`"`), c.b.repeat(c.char(), lo, hi), c.b.lit(`"`))
}

// formats maps a format to a regular expression of strings in it (a
// subset where the format is wide: simple URIs, short e-mail addresses,
// days 01-28).
var formats = map[string]string{
	"date":          `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])`,
	"time":          `([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`,
	"date-time":     `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`,
	"duration":      `P[0-9]{1,4}D`,
	"uuid":          `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`,
	"email":         `[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,2}@[a-z0-9]{1,20}\.[a-z]{2,6}`,
	"idn-email":     `[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,2}@[a-z0-9]{1,20}\.[a-z]{2,6}`,
	"hostname":      `[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3}`,
	"idn-hostname":  `[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3}`,
	"ipv4":          `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}`,
	"ipv6":          `[0-9a-f]{1,4}(:[0-9a-f]{1,4}){7}`,
	"uri":           `https?://[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3}(/[A-Za-z0-9_-]{1,20}){0,6}`,
	"iri":           `https?://[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3}(/[A-Za-z0-9_-]{1,20}){0,6}`,
	"uri-reference": `(https?://[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3})?(/[A-Za-z0-9_-]{1,20}){0,6}`,
	"iri-reference": `(https?://[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3})?(/[A-Za-z0-9_-]{1,20}){0,6}`,
	"uri-template":  `https?://[a-z0-9]{1,20}(\.[a-z0-9]{1,20}){0,3}(/[A-Za-z0-9_-]{1,20}){0,6}`,
	"json-pointer":  `(/[A-Za-z0-9_]{1,20}){0,6}`,
	"regex":         `[A-Za-z0-9_]{0,20}`,
	// relative-json-pointer: a count then a pointer.
	"relative-json-pointer": `(0|[1-9][0-9]{0,2})(/[A-Za-z0-9_]{1,20}){0,6}`,
}

// str is a string with its length, pattern and format keywords.
func (c *conv) str(s *object, path string) ([]elem, error) {
	lo, _ := intKw(s, "minLength")
	hi, hasHi := intKw(s, "maxLength")
	if !hasHi {
		hi = -1
	} else if hi < lo {
		return nil, schemaErr("maxLength", path, "maxLength %d < minLength %d", hi, lo)
	} else if hi > lo+maxStringLen {
		hi = max(lo, maxStringLen)
	}
	pattern, hasPattern := s.vals["pattern"].(string)
	if f, ok := s.vals["format"].(string); ok {
		if fp, known := formats[f]; known {
			if hasPattern {
				return nil, schemaErr("format", path, "format %q together with pattern is not supported", f)
			}
			pattern, hasPattern = fp, true
		} // other formats are annotations (validators ignore unknown formats)
	}
	if _, ok := s.get("pattern"); ok && !hasPattern {
		return nil, schemaErr("pattern", path, "must be a string")
	}
	if !hasPattern {
		if lo > 1000 {
			return nil, schemaErr("minLength", path, "minLength %d is too long", lo)
		}
		return c.stringOf(lo, hi), nil
	}
	seq, err := c.patternString(pattern, lo, hi, path)
	if err != nil {
		return nil, err
	}
	return cat(c.b.lit(`"`), seq, c.b.lit(`"`)), nil
}

// patternString is string content matching pattern within the length
// bounds: unbounded repetitions are capped until the longest match fits.
func (c *conv) patternString(pattern string, lo, hi int, path string) ([]elem, error) {
	re, err := parseRegex(pattern)
	if err != nil {
		return nil, schemaErr("pattern", path, "%v", err)
	}
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, schemaErr("pattern", path, "%v", err)
	}
	for _, capStar := range []int{maxStringLen, 16, 4, 1, 0} {
		rlo, rhi := regexLen(re, capStar)
		if rlo < lo {
			return nil, schemaErr("minLength", path, "pattern %q allows strings shorter than minLength %d", pattern, lo)
		}
		if hi >= 0 && (rhi < 0 || rhi > hi) {
			continue
		}
		star := capStar
		if hi < 0 {
			star = -1
		}
		seq, err := c.b.regexTree(re, pattern, true, star)
		if err != nil {
			return nil, schemaErr("pattern", path, "%v", err)
		}
		return seq, nil
	}
	return nil, schemaErr("maxLength", path, "pattern %q allows strings longer than maxLength %d", pattern, hi)
}

// bounds reads the numeric bounds of s: lo/hi with exclusivity, NaN when
// absent.
func (c *conv) bounds(s *object) (lo, hi float64, exLo, exHi bool) {
	lo, hi = numF(s.vals["minimum"]), numF(s.vals["maximum"])
	switch x := s.vals["exclusiveMinimum"].(type) {
	case bool:
		exLo = x
	case json.Number:
		if v := numF(x); math.IsNaN(lo) || v >= lo {
			lo, exLo = v, true
		}
	}
	switch x := s.vals["exclusiveMaximum"].(type) {
	case bool:
		exHi = x
	case json.Number:
		if v := numF(x); math.IsNaN(hi) || v <= hi {
			hi, exHi = v, true
		}
	}
	return lo, hi, exLo, exHi
}

// maxInt is the largest integer generated (15 digits: exact in float64).
const maxInt = 999_999_999_999_999

// intBounds turns bounds into an inclusive integer range.
func intBounds(lo, hi float64, exLo, exHi bool) (int64, int64) {
	l, h := int64(-maxInt), int64(maxInt)
	if !math.IsNaN(lo) {
		f := math.Ceil(lo)
		if exLo && f == lo {
			f++
		}
		l = int64(max(f, -maxInt))
	}
	if !math.IsNaN(hi) {
		f := math.Floor(hi)
		if exHi && f == hi {
			f--
		}
		h = int64(min(f, maxInt))
	}
	return l, h
}

func (c *conv) multipleOf(s *object, integer bool, path string) error {
	m, ok := s.get("multipleOf")
	if !ok {
		return nil
	}
	if f := numF(m); integer && (f == 1 || f == 0.5 || f == 0.25) {
		return nil // every integer is a multiple
	}
	return schemaErr("multipleOf", path, "not supported except where every integer is a multiple")
}

func (c *conv) integer(s *object, path string) ([]elem, error) {
	if err := c.multipleOf(s, true, path); err != nil {
		return nil, err
	}
	l, h := intBounds(c.bounds(s))
	if l > h {
		return nil, schemaErr("minimum", path, "no integer between the bounds")
	}
	return c.intRange(l, h), nil
}

func (c *conv) number(s *object, path string) ([]elem, error) {
	if err := c.multipleOf(s, false, path); err != nil {
		return nil, err
	}
	lo, hi, exLo, exHi := c.bounds(s)
	l, h := intBounds(lo, hi, exLo, exHi)
	b := c.b
	frac := cat(b.lit("."), b.repeat(b.set('0', '9'), 1, maxNumDigits))
	if math.IsNaN(lo) && math.IsNaN(hi) {
		return cat(c.intRange(l, h), b.opt(frac)), nil
	}
	var alts [][]elem
	if l <= h {
		alts = append(alts, c.intRange(l, h))
	}
	// n.f lies in (n, n+1): inside the bounds for n in [max(l,0), h-1].
	if fl, fh := max(l, 0), h-1; fl <= fh {
		alts = append(alts, cat(c.intRange(fl, fh), frac))
	}
	if len(alts) == 0 {
		// No integer inside: the midpoint (or a finite bound) is.
		v := (lo + hi) / 2
		if math.IsNaN(v) || math.IsInf(v, 0) || !(v > lo || !exLo && v == lo) || !(v < hi || !exHi && v == hi) {
			return nil, schemaErr("minimum", path, "cannot find a number between the bounds")
		}
		return b.lit(strconv.FormatFloat(v, 'f', -1, 64)), nil
	}
	return b.alt(alts...), nil
}

// intRange is the decimal integers in [l, h].
func (c *conv) intRange(l, h int64) []elem {
	b := c.b
	var alts [][]elem
	if h >= 0 {
		alts = append(alts, c.natRange(uint64(max(l, 0)), uint64(h)))
	}
	if l < 0 {
		alts = append(alts, cat(b.lit("-"), c.natRange(uint64(max(-h, 1)), uint64(-l))))
	}
	return b.alt(alts...)
}

// natRange is the naturals in [l, h] without leading zeros.
func (c *conv) natRange(l, h uint64) []elem {
	var alts [][]elem
	top := len(strconv.FormatUint(h, 10))
	if h == maxInt {
		// Unbounded above: l's length exactly, then any longer number.
		n := len(strconv.FormatUint(l, 10))
		if n < top {
			b := c.b
			alts = append(alts, cat(b.set('1', '9'), b.repeat(b.set('0', '9'), n, top-1)))
			h, top = uint64(math.Pow10(n))-1, n
		}
	}
	for n := len(strconv.FormatUint(l, 10)); n <= top; n++ {
		lo, hi := uint64(0), uint64(math.Pow10(n))-1
		if n > 1 {
			lo = uint64(math.Pow10(n - 1))
		}
		lo, hi = max(lo, l), min(hi, h)
		if lo <= hi {
			alts = append(alts, c.digits(strconv.FormatUint(lo, 10), strconv.FormatUint(hi, 10)))
		}
	}
	return c.b.alt(alts...)
}

// digits is the digit strings between a and b of the same length.
func (c *conv) digits(a, z string) []elem {
	b := c.b
	if a == "" {
		return nil
	}
	if strings.Trim(a[1:], "0") == "" && strings.Trim(z[1:], "9") == "" {
		return cat(b.set(a[0], z[0]), b.repeat(b.set('0', '9'), len(a)-1, len(a)-1))
	}
	if a[0] == z[0] {
		return cat(b.lit(a[:1]), c.digits(a[1:], z[1:]))
	}
	n := len(a) - 1
	alts := [][]elem{cat(b.lit(a[:1]), c.digits(a[1:], strings.Repeat("9", n)))}
	if a[0]+1 <= z[0]-1 {
		alts = append(alts, cat(b.set(a[0]+1, z[0]-1), b.repeat(b.set('0', '9'), n, n)))
	}
	alts = append(alts, cat(b.lit(z[:1]), c.digits(strings.Repeat("0", n), z[1:])))
	return b.alt(alts...)
}

// anyValue is any JSON value (nesting through one shared rule).
func (c *conv) anyValue() []elem {
	if c.anyVal != nil {
		return c.anyVal
	}
	b := c.b
	r := b.newRule("value")
	c.anyVal = []elem{{kRef, r}}
	str := c.stringOf(0, -1)
	val := c.anyVal
	obj := cat(b.lit("{"), b.opt(cat(str, b.lit(":"), val, b.star(cat(b.lit(","), str, b.lit(":"), val)))), b.lit("}"))
	arr := cat(b.lit("["), b.opt(cat(val, b.star(cat(b.lit(","), val)))), b.lit("]"))
	num := cat(c.intRange(-maxInt, maxInt), b.opt(cat(b.lit("."), b.repeat(b.set('0', '9'), 1, maxNumDigits))))
	b.define(r, [][]elem{obj, arr, str, num, b.lit("true"), b.lit("false"), b.lit("null")})
	return c.anyVal
}

// anyObject is any JSON object.
func (c *conv) anyObject() []elem {
	b := c.b
	str, val := c.stringOf(0, -1), c.anyValue()
	return cat(b.lit("{"), b.opt(cat(str, b.lit(":"), val, b.star(cat(b.lit(","), str, b.lit(":"), val)))), b.lit("}"))
}

// nameFits checks a property name against a propertyNames schema (the
// keywords a name check needs; others are refused).
func (c *conv) nameFits(ps any, name, path string) (bool, error) {
	pv, err := c.deref(ps, path)
	if err != nil {
		return false, err
	}
	switch x := pv.(type) {
	case bool:
		return x, nil
	case *object:
		for _, k := range x.keys {
			switch k {
			case "type", "pattern", "minLength", "maxLength", "enum", "const", "format":
			default:
				if assertion[k] {
					return false, schemaErr("propertyNames", path, "keyword %q in propertyNames is not supported", k)
				}
			}
		}
		if t, ok := x.get("type"); ok && !contains(typeList(t), "string") {
			return false, nil
		}
		if f, ok := x.vals["format"].(string); ok {
			if _, known := formats[f]; known {
				return false, schemaErr("propertyNames", path, "format in propertyNames is not supported")
			}
		}
		if vals, ok := enumValues(x); ok && !disjointOne(vals, name) {
			return c.stringFits(x, name), nil
		} else if ok {
			return false, nil
		}
		if p, ok := x.vals["pattern"].(string); ok {
			if _, err := regexp.Compile(p); err != nil {
				return false, schemaErr("propertyNames", path, "pattern: %v", err)
			}
		}
		return c.stringFits(x, name), nil
	}
	return false, schemaErr("propertyNames", path, "must be a schema")
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func disjointOne(vals []any, s string) bool {
	for _, v := range vals {
		if v == any(s) {
			return false
		}
	}
	return true
}
