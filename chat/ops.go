package chat

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Runtime operations the compiled expressions call (see compile.go), with
// the semantics of Python objects inside jinja2's
// ImmutableSandboxedEnvironment.

// maxRepeat bounds the size of a string or list built with "*", where
// Python would only run out of memory.
const maxRepeat = 1 << 24

func undefinedError(hint string) error {
	if hint != "" {
		return fmt.Errorf("UndefinedError: '%s' is undefined", hint)
	}
	return fmt.Errorf("UndefinedError: an undefined value was used")
}

// strMethods are the attributes of str; those we implement are callable,
// the rest fail when called.
var strMethods = setOf("capitalize", "casefold", "center", "count", "encode", "endswith",
	"expandtabs", "find", "format", "format_map", "index", "isalnum", "isalpha", "isascii",
	"isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable", "isspace",
	"istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans", "partition",
	"removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition",
	"rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title",
	"translate", "upper", "zfill")

var (
	dictMethods  = setOf("clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values")
	listMethods  = setOf("append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove", "reverse", "sort")
	tupleMethods = setOf("count", "index")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// boundMethod returns obj.name as a callable.
func boundMethod(obj jinja.Value, name string) jinja.Value {
	return jinja.NewCallable(name, func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		return callMethod(name, obj, args, kwargs)
	})
}

// getattr is jinja2's sandboxed getattr (obj.name): a Python attribute
// first (so d.items is the method even when d has an "items" key), then
// the item, else undefined. Attribute access on undefined fails.
func getattr(obj jinja.Value, name, hint string) (jinja.Value, error) {
	if obj.IsUndefined() {
		return jinja.Undefined(), undefinedError(hint)
	}
	if strings.HasPrefix(name, "_") {
		// The sandbox hides private and dunder attributes.
		return jinja.Undefined(), nil
	}
	kind := kindOf(obj)
	switch {
	case obj.IsString() || kind == "Markup":
		if strMethods[name] {
			return boundMethod(obj, name), nil
		}
	case obj.IsList() && kind == "":
		if listMethods[name] {
			return boundMethod(obj, name), nil
		}
	case obj.IsList() && kind == "tuple":
		if tupleMethods[name] {
			return boundMethod(obj, name), nil
		}
	case obj.IsDict() && kind == "":
		if dictMethods[name] {
			return boundMethod(obj, name), nil
		}
		if v, ok := obj.AsDict().Get(name); ok {
			return v, nil
		}
	case obj.IsDict():
		// A namespace (or the library's loop and cycler objects, which
		// are dicts without dict methods in jinja2 too) exposes its keys.
		if v, ok := obj.AsDict().Get(name); ok {
			return v, nil
		}
	}
	return jinja.Undefined(), nil
}

// callattr is obj.name(args...).
func callattr(obj jinja.Value, name string, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	m, err := getattr(obj, name, "")
	if err != nil {
		return m, err
	}
	if !m.IsCallable() {
		if m.IsUndefined() {
			return m, fmt.Errorf("UndefinedError: %s has no attribute '%s'", objectRepr(obj), name)
		}
		return m, fmt.Errorf("TypeError: '%s' object is not callable", pyTypeName(m))
	}
	return m.AsCallable().Fn(args, kwargs)
}

// objectRepr names a value's type as jinja2's error messages do.
func objectRepr(v jinja.Value) string {
	if v.IsNone() {
		return "None"
	}
	return "'" + pyTypeName(v) + " object'"
}

// getitem is jinja2's sandboxed getitem (obj[key]): the item first, then
// for a string key the attribute, else undefined.
func getitem(obj, key jinja.Value, hint string) (jinja.Value, error) {
	if obj.IsUndefined() {
		return jinja.Undefined(), undefinedError(hint)
	}
	key = plain(key)
	kind := kindOf(obj)
	switch {
	case obj.IsString() || kind == "Markup":
		if i, ok := intIndex(key); ok {
			s, _ := asString(obj)
			r := []rune(s)
			if i < 0 {
				i += int64(len(r))
			}
			if i >= 0 && i < int64(len(r)) {
				return jinja.NewString(string(r[i])), nil
			}
			return jinja.Undefined(), nil
		}
	case obj.IsList() && isSequence(kind):
		if i, ok := intIndex(key); ok {
			items := obj.AsList().Items
			if i < 0 {
				i += int64(len(items))
			}
			if i >= 0 && i < int64(len(items)) {
				return items[i], nil
			}
			return jinja.Undefined(), nil
		}
	case obj.IsDict() && kind == "":
		if v, ok := dictGet(obj.AsDict(), key); ok {
			return v, nil
		}
	}
	if key.IsString() {
		return getattr(obj, key.AsString(), hint)
	}
	return jinja.Undefined(), nil
}

// intIndex returns an int or bool key as an index.
func intIndex(v jinja.Value) (int64, bool) {
	switch {
	case v.IsInt():
		return v.AsInt(), true
	case v.IsBool():
		return toInt(v), true
	}
	return 0, false
}

// slice is obj[start:stop:step] for str, Markup, list and tuple; other
// values give undefined, as jinja2 turns the TypeError into undefined.
func slice(obj, start, stop, step jinja.Value) (jinja.Value, error) {
	if obj.IsUndefined() {
		return jinja.Undefined(), undefinedError("")
	}
	var n int
	var runes []rune
	kind := kindOf(obj)
	switch {
	case obj.IsString() || kind == "Markup":
		s, _ := asString(obj)
		runes = []rune(s)
		n = len(runes)
	case obj.IsList() && isSequence(kind):
		n = obj.AsList().Len()
	default:
		return jinja.Undefined(), nil
	}
	idx := func(v jinja.Value) (int64, bool, bool) {
		if v.IsNone() {
			return 0, false, true
		}
		i, ok := intIndex(v)
		return i, true, ok
	}
	st, hasStep, ok := idx(step)
	if !ok {
		return jinja.Undefined(), nil
	}
	if !hasStep {
		st = 1
	}
	if st == 0 {
		return jinja.Undefined(), fmt.Errorf("ValueError: slice step cannot be zero")
	}
	// Python's PySlice_AdjustIndices.
	adjust := func(v jinja.Value, def int64) (int64, bool) {
		i, has, ok := idx(v)
		if !ok {
			return 0, false
		}
		if !has {
			return def, true
		}
		ln := int64(n)
		if i < 0 {
			i += ln
			if i < 0 {
				if st < 0 {
					i = -1
				} else {
					i = 0
				}
			}
		} else if i >= ln {
			if st < 0 {
				i = ln - 1
			} else {
				i = ln
			}
		}
		return i, true
	}
	var lo, hi int64
	if st > 0 {
		lo, ok = adjust(start, 0)
		if ok {
			hi, ok = adjust(stop, int64(n))
		}
	} else {
		lo, ok = adjust(start, int64(n)-1)
		if ok {
			hi, ok = adjust(stop, -1)
		}
	}
	if !ok {
		return jinja.Undefined(), nil
	}
	var pick []int64
	for i := lo; st > 0 && i < hi || st < 0 && i > hi; i += st {
		pick = append(pick, i)
	}
	if runes != nil || n == 0 && (obj.IsString() || kind == "Markup") {
		out := make([]rune, len(pick))
		for j, i := range pick {
			out[j] = runes[i]
		}
		if kind == "Markup" {
			return newMarkup(string(out)), nil
		}
		return jinja.NewString(string(out)), nil
	}
	items := obj.AsList().Items
	out := make([]jinja.Value, len(pick))
	for j, i := range pick {
		out[j] = items[i]
	}
	if kind == "tuple" {
		return newTuple(out), nil
	}
	if kind == "range" {
		return markList(jinja.NewList(out), "range"), nil
	}
	return jinja.NewList(out), nil
}

// maxRange is the sandbox's limit on range() lengths.
const maxRange = 100000

// pyRange is Python's range(), with the sandbox's size limit.
func pyRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	for _, a := range args {
		if !isInt(plain(a)) {
			return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object cannot be interpreted as an integer", pyTypeName(a))
		}
	}
	switch len(args) {
	case 1:
		stop = toInt(args[0])
	case 2, 3:
		start, stop = toInt(args[0]), toInt(args[1])
		if len(args) == 3 {
			step = toInt(args[2])
		}
	default:
		return jinja.Undefined(), fmt.Errorf("TypeError: range expected 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("ValueError: range() arg 3 must not be zero")
	}
	var n int64
	switch {
	case step > 0 && stop > start:
		n = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		n = (start - stop - step - 1) / -step
	}
	if n > maxRange || n < 0 {
		return jinja.Undefined(), fmt.Errorf("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return markList(jinja.NewList(items), "range"), nil
}

// compareChain is a (possibly chained) comparison: args alternate operand,
// operator name, operand, ...
func compareChain(args []jinja.Value) (jinja.Value, error) {
	left := args[0]
	for i := 1; i+1 < len(args); i += 2 {
		op, right := args[i].AsString(), args[i+1]
		ok, err := compare(left, op, right)
		if err != nil || !ok {
			return jinja.NewBool(false), err
		}
		left = right
	}
	return jinja.NewBool(true), nil
}

func compare(a jinja.Value, op string, b jinja.Value) (bool, error) {
	switch op {
	case "eq":
		return pyEqual(a, b), nil
	case "ne":
		return !pyEqual(a, b), nil
	case "in":
		return pyContains(b, a)
	case "notin":
		ok, err := pyContains(b, a)
		return !ok, err
	}
	if a.IsUndefined() || b.IsUndefined() {
		return false, undefinedError("")
	}
	symbol := map[string]string{"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
	c, err := pyCompare(a, b)
	if err != nil {
		return false, fmt.Errorf("TypeError: '%s' not supported between instances of '%s' and '%s'", symbol, pyTypeName(a), pyTypeName(b))
	}
	switch op {
	case "lt":
		return c < 0, nil
	case "le":
		return c <= 0, nil
	case "gt":
		return c > 0, nil
	}
	return c >= 0, nil
}

// escapeHTML is markupsafe.escape's text transformation.
func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// markupText returns what Markup concatenation appends for v: Markup as
// is, a str escaped.
func markupText(v jinja.Value) string {
	s, _ := asString(v)
	if isMarkup(v) {
		return s
	}
	return escapeHTML(s)
}

func unsupported(op string, a, b jinja.Value) error {
	return fmt.Errorf("TypeError: unsupported operand type(s) for %s: '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
}

// isInt reports an int or bool (Python's bool is an int).
func isInt(v jinja.Value) bool { return v.IsInt() || v.IsBool() }

func add(a, b jinja.Value) (jinja.Value, error) {
	if a.IsUndefined() || b.IsUndefined() {
		return jinja.Undefined(), undefinedError("")
	}
	as, aStr := asString(a)
	bs, bStr := asString(b)
	switch {
	case aStr && bStr:
		if isMarkup(a) || isMarkup(b) {
			return newMarkup(markupText(a) + markupText(b)), nil
		}
		return jinja.NewString(as + bs), nil
	case a.IsString():
		return jinja.Undefined(), fmt.Errorf("TypeError: can only concatenate str (not \"%s\") to str", pyTypeName(b))
	case isInt(a) && isInt(b):
		x, y := toInt(a), toInt(b)
		s := x + y
		if (s > x) != (y > 0) {
			return jinja.NewFloat(float64(x) + float64(y)), nil
		}
		return jinja.NewInt(s), nil
	}
	if x, ok := pyNumber(a); ok {
		if y, ok := pyNumber(b); ok {
			return jinja.NewFloat(x + y), nil
		}
	}
	ak, bk := kindOf(a), kindOf(b)
	if a.IsList() && b.IsList() && ak == bk && (ak == "" || ak == "tuple") {
		items := append(append([]jinja.Value(nil), a.AsList().Items...), b.AsList().Items...)
		if ak == "tuple" {
			return newTuple(items), nil
		}
		return jinja.NewList(items), nil
	}
	if a.IsList() && (ak == "" || ak == "tuple") {
		return jinja.Undefined(), fmt.Errorf("TypeError: can only concatenate %s (not \"%s\") to %s", pyTypeName(a), pyTypeName(b), pyTypeName(a))
	}
	return jinja.Undefined(), unsupported("+", a, b)
}

// arith applies a numeric operator, with Python's int/float rules.
func arith(op string, a, b jinja.Value) (jinja.Value, error) {
	if a.IsUndefined() || b.IsUndefined() {
		return jinja.Undefined(), undefinedError("")
	}
	x, okA := pyNumber(a)
	y, okB := pyNumber(b)
	if !okA || !okB {
		return jinja.Undefined(), unsupported(op, a, b)
	}
	ints := isInt(a) && isInt(b)
	i, j := toInt(a), toInt(b)
	switch op {
	case "-":
		if ints {
			d := i - j
			if (d < i) == (j > 0) {
				return jinja.NewInt(d), nil
			}
		}
		return jinja.NewFloat(x - y), nil
	case "*":
		if ints {
			hi, lo := bits.Mul64(uint64(abs64(i)), uint64(abs64(j)))
			if hi == 0 && lo <= math.MaxInt64 {
				p := int64(lo)
				if (i < 0) != (j < 0) {
					p = -p
				}
				return jinja.NewInt(p), nil
			}
		}
		return jinja.NewFloat(x * y), nil
	case "/":
		if y == 0 {
			return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: division by zero")
		}
		return jinja.NewFloat(x / y), nil
	case "//":
		if y == 0 {
			if ints {
				return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: integer division or modulo by zero")
			}
			return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: float floor division by zero")
		}
		if ints && !(i == math.MinInt64 && j == -1) {
			q := i / j
			if (i%j != 0) && ((i < 0) != (j < 0)) {
				q--
			}
			return jinja.NewInt(q), nil
		}
		return jinja.NewFloat(math.Floor(x / y)), nil
	case "%":
		if y == 0 {
			if ints {
				return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: integer modulo by zero")
			}
			return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: float modulo")
		}
		if ints && !(i == math.MinInt64 && j == -1) {
			m := i % j
			if m != 0 && (m < 0) != (j < 0) {
				m += j
			}
			return jinja.NewInt(m), nil
		}
		m := math.Mod(x, y)
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return jinja.NewFloat(m), nil
	case "**":
		if ints && j >= 0 {
			r, base, e := int64(1), i, j
			overflow := false
			for e > 0 && !overflow {
				if e&1 == 1 {
					hi, lo := bits.Mul64(uint64(abs64(r)), uint64(abs64(base)))
					overflow = hi != 0 || lo > math.MaxInt64
					neg := (r < 0) != (base < 0)
					r = int64(lo)
					if neg {
						r = -r
					}
				}
				e >>= 1
				if e > 0 {
					hi, lo := bits.Mul64(uint64(abs64(base)), uint64(abs64(base)))
					overflow = overflow || hi != 0 || lo > math.MaxInt64
					base = int64(lo)
				}
			}
			if !overflow {
				return jinja.NewInt(r), nil
			}
		}
		if x == 0 && y < 0 {
			return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: 0.0 cannot be raised to a negative power")
		}
		return jinja.NewFloat(math.Pow(x, y)), nil
	}
	return jinja.Undefined(), fmt.Errorf("unknown operator %s", op)
}

func abs64(i int64) int64 {
	if i < 0 {
		return -i
	}
	return i
}

func mul(a, b jinja.Value) (jinja.Value, error) {
	if a.IsUndefined() || b.IsUndefined() {
		return jinja.Undefined(), undefinedError("")
	}
	seq, n := a, b
	if isInt(a) && !isInt(b) {
		seq, n = b, a
	}
	kind := kindOf(seq)
	if s, ok := asString(seq); ok && isInt(n) {
		k := max(toInt(n), 0)
		if k > 0 && int64(len(s)) > maxRepeat/k {
			return jinja.Undefined(), fmt.Errorf("MemoryError: repeated string too long")
		}
		r := strings.Repeat(s, int(k))
		if kind == "Markup" {
			return newMarkup(r), nil
		}
		return jinja.NewString(r), nil
	}
	if seq.IsList() && (kind == "" || kind == "tuple") && isInt(n) {
		k := max(toInt(n), 0)
		items := seq.AsList().Items
		if k > 0 && int64(len(items)) > maxRepeat/k {
			return jinja.Undefined(), fmt.Errorf("MemoryError: repeated list too long")
		}
		var out []jinja.Value
		for range k {
			out = append(out, items...)
		}
		if kind == "tuple" {
			return newTuple(out), nil
		}
		return jinja.NewList(out), nil
	}
	return arith("*", a, b)
}

func mod(a, b jinja.Value) (jinja.Value, error) {
	if s, ok := asString(a); ok {
		// printf-style formatting: a tuple supplies several arguments,
		// anything else one.
		args := []jinja.Value{b}
		if b.IsList() && kindOf(b) == "tuple" {
			args = b.AsList().Items
		}
		out, err := filterFormat(append([]jinja.Value{jinja.NewString(s)}, args...), nil)
		if err != nil && b.IsDict() {
			return jinja.Undefined(), fmt.Errorf("TypeError: format requires a mapping form not supported here")
		}
		return out, err
	}
	return arith("%", a, b)
}

func neg(v jinja.Value) (jinja.Value, error) {
	switch {
	case v.IsUndefined():
		return jinja.Undefined(), undefinedError("")
	case isInt(v):
		if toInt(v) == math.MinInt64 {
			return jinja.NewFloat(-float64(toInt(v))), nil
		}
		return jinja.NewInt(-toInt(v)), nil
	case v.IsFloat():
		return jinja.NewFloat(-v.AsFloat()), nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: bad operand type for unary -: '%s'", pyTypeName(v))
}

func pos(v jinja.Value) (jinja.Value, error) {
	switch {
	case v.IsUndefined():
		return jinja.Undefined(), undefinedError("")
	case isInt(v):
		return jinja.NewInt(toInt(v)), nil
	case v.IsFloat():
		return v, nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: bad operand type for unary +: '%s'", pyTypeName(v))
}

// iterable returns what a for loop iterates: the list itself, a dict's
// keys, a string's characters, nothing for undefined; anything else fails
// as in Python.
func iterable(v jinja.Value) (jinja.Value, error) {
	if v.IsList() && !isMarkup(v) {
		return v, nil
	}
	if v.IsDict() && kindOf(v) != "" {
		return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object is not iterable", pyTypeName(v))
	}
	items, err := iterate(plain(v))
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewList(items), nil
}

// dictDisplay builds a dict from alternating keys and values, in order.
func dictDisplay(args []jinja.Value) (jinja.Value, error) {
	d := jinja.NewDict()
	for i := 0; i+1 < len(args); i += 2 {
		k, err := dictKey(args[i])
		if err != nil {
			return jinja.Undefined(), err
		}
		d.AsDict().Set(k, args[i+1])
	}
	return d, nil
}

// parseFloatLiteral reads a jinja2 float literal.
func parseFloatLiteral(s string) (jinja.Value, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return jinja.Undefined(), err
	}
	return jinja.NewFloat(f), nil
}

// concat is jinja2's ~: the str() of each operand joined.
func concat(args []jinja.Value) jinja.Value {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(pyStr(a))
	}
	return jinja.NewString(b.String())
}
