package chat

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/ardanlabs/jinja"
)

// The library's values are JSON-like: undefined, none, bool, int, float,
// string, list, dict, callable. Python has more types that templates can
// tell apart, so some lists stand for them, remembered here by identity
// (weakly, so a collected list drops its entry):
//
//   - generator: what map, select, reject, selectattr, rejectattr,
//     unique, batch and the items filter return. json.dumps and len()
//     reject it, so "tools | map(...) | tojson" fails in transformers.
//   - list_reverseiterator: the reverse filter's result for a list.
//   - dict_items, dict_keys, dict_values: dict views (not JSON
//     serializable, but they have a length).
//   - tuple: a tuple display; prints with parentheses.
//   - range: what range() returns (a sequence, but not JSON serializable).
//   - Markup: a one-string list holding markupsafe's Markup, from safe and
//     escape; "+" with a Markup escapes the other operand.
//
// A dict made by namespace() is a Namespace, which has no dict methods. It
// is marked by an entry under nsMarker in its Data map that is missing
// from Keys, so it stays invisible to iteration and length; dicts are
// looked at on every attribute access, and this avoids a weak handle per
// dict.
var listKinds sync.Map // weak.Pointer[jinja.List] -> string

const nsMarker = "\x00namespace"

// markList records that list v stands for Python type kind.
func markList(v jinja.Value, kind string) jinja.Value {
	l := v.AsList()
	wp := weak.Make(l)
	listKinds.Store(wp, kind)
	runtime.AddCleanup(l, func(wp weak.Pointer[jinja.List]) { listKinds.Delete(wp) }, wp)
	return v
}

// markNamespace marks dict v as a Namespace.
func markNamespace(v jinja.Value) jinja.Value {
	v.AsDict().Data[nsMarker] = jinja.None()
	return v
}

// kindOf returns the Python type a list or dict stands for, or "" for a
// plain list or dict (or any other value).
func kindOf(v jinja.Value) string {
	switch {
	case v.IsList():
		if k, ok := listKinds.Load(weak.Make(v.AsList())); ok {
			return k.(string)
		}
	case v.IsDict():
		if _, ok := v.AsDict().Data[nsMarker]; ok {
			return "Namespace"
		}
	}
	return ""
}

// isLazy reports a generator, iterator, view or range: iterable, but not
// JSON serializable.
func isLazy(kind string) bool {
	switch kind {
	case "generator", "list_reverseiterator", "dict_items", "dict_keys", "dict_values", "range":
		return true
	}
	return false
}

// isSequence reports a list-backed kind that supports indexing.
func isSequence(kind string) bool {
	return kind == "" || kind == "tuple" || kind == "range"
}

// hasLen reports whether len() accepts a value of kind.
func hasLen(kind string) bool {
	return kind != "generator" && kind != "list_reverseiterator"
}

// newMarkup returns a Markup string.
func newMarkup(s string) jinja.Value {
	return markList(jinja.NewList([]jinja.Value{jinja.NewString(s)}), "Markup")
}

// asString returns the text of a str or Markup value.
func asString(v jinja.Value) (string, bool) {
	if v.IsString() {
		return v.AsString(), true
	}
	if v.IsList() && v.AsList().Len() == 1 && kindOf(v) == "Markup" {
		return v.AsList().Items[0].AsString(), true
	}
	return "", false
}

// isMarkup reports whether v is a Markup string.
func isMarkup(v jinja.Value) bool {
	return v.IsList() && kindOf(v) == "Markup"
}

// plain turns a Markup into a str and leaves other values alone, for code
// that does not care about the difference.
func plain(v jinja.Value) jinja.Value {
	if s, ok := asString(v); ok && !v.IsString() {
		return jinja.NewString(s)
	}
	return v
}

// newTuple returns a tuple.
func newTuple(items []jinja.Value) jinja.Value {
	return markList(jinja.NewList(items), "tuple")
}

// The library's dicts have string keys. Python dict displays may use
// other keys ({0: 'a'}), so a non-string key is stored as a string
// starting with a NUL byte that names its type; keyValue turns it back.
// JSON input cannot make such keys except by spelling them out, which
// only changes how that key prints.

// dictKey returns the stored key for a Python key.
func dictKey(v jinja.Value) (string, error) {
	v = plain(v)
	switch {
	case v.IsString():
		return v.AsString(), nil
	case v.IsInt() || v.IsBool():
		// 1, True and 1.0 are one key in Python.
		return "\x00i:" + strconv.FormatInt(toInt(v), 10), nil
	case v.IsFloat():
		f := v.AsFloat()
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return "\x00i:" + strconv.FormatInt(int64(f), 10), nil
		}
		return "\x00f:" + strconv.FormatFloat(f, 'g', -1, 64), nil
	case v.IsNone():
		return "\x00n", nil
	}
	return "", fmt.Errorf("TypeError: unhashable type: '%s'", pyTypeName(v))
}

// keyValue is the Python key a stored key stands for.
func keyValue(k string) jinja.Value {
	if len(k) == 0 || k[0] != 0 {
		return jinja.NewString(k)
	}
	switch {
	case strings.HasPrefix(k, "\x00i:"):
		if n, err := strconv.ParseInt(k[3:], 10, 64); err == nil {
			return jinja.NewInt(n)
		}
	case strings.HasPrefix(k, "\x00f:"):
		if f, err := strconv.ParseFloat(k[3:], 64); err == nil {
			return jinja.NewFloat(f)
		}
	case k == "\x00n":
		return jinja.None()
	}
	return jinja.NewString(k)
}

// dictGet looks a Python key up in a dict.
func dictGet(d *jinja.Dict, key jinja.Value) (jinja.Value, bool) {
	k, err := dictKey(key)
	if err != nil {
		return jinja.Undefined(), false
	}
	return d.Get(k)
}
