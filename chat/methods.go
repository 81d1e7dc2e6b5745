package chat

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// unsafe lists the methods jinja2's ImmutableSandboxedEnvironment
// (transformers' choice) refuses because they mutate a known mutable
// type. list.pop and list.clear are not among them in jinja2, so they work.
var unsafe = map[string]map[string]bool{
	"list": setOf("append", "reverse", "insert", "sort", "extend", "remove"),
	"dict": setOf("clear", "pop", "popitem", "setdefault", "update"),
}

// callMethod runs obj.name(args...) with Python semantics.
func callMethod(name string, obj jinja.Value, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	tn := pyTypeName(obj)
	if unsafe[tn][name] {
		return jinja.Undefined(), fmt.Errorf("SecurityError: access to attribute '%s' of '%s' object is unsafe.", name, tn)
	}
	for i, a := range args {
		args[i] = plain(a)
	}
	switch {
	case obj.IsString() || isMarkup(obj):
		s, _ := asString(obj)
		if v, ok, err := strMethod(name, s, args, kwargs); ok {
			return v, err
		}
	case obj.IsDict():
		if v, ok, err := dictMethod(name, obj.AsDict(), args, kwargs); ok {
			return v, err
		}
	case obj.IsList():
		switch name {
		case "index", "count":
			n := 0
			for i, it := range obj.AsList().Items {
				if len(args) > 0 && pyEqual(it, args[0]) {
					if name == "index" {
						return jinja.NewInt(int64(i)), nil
					}
					n++
				}
			}
			if name == "index" {
				return jinja.Undefined(), fmt.Errorf("ValueError: value is not in list")
			}
			return jinja.NewInt(int64(n)), nil
		case "copy":
			return jinja.NewList(append([]jinja.Value(nil), obj.AsList().Items...)), nil
		case "clear":
			obj.AsList().Items = nil
			return jinja.None(), nil
		case "pop":
			l := obj.AsList()
			if l.Len() == 0 {
				return jinja.Undefined(), fmt.Errorf("IndexError: pop from empty list")
			}
			i := int64(l.Len() - 1)
			if len(args) > 0 {
				var ok bool
				if i, ok = intIndex(args[0]); !ok {
					return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object cannot be interpreted as an integer", pyTypeName(args[0]))
				}
				if i < 0 {
					i += int64(l.Len())
				}
				if i < 0 || i >= int64(l.Len()) {
					return jinja.Undefined(), fmt.Errorf("IndexError: pop index out of range")
				}
			}
			v := l.Items[i]
			l.Items = append(l.Items[:i:i], l.Items[i+1:]...)
			return v, nil
		}
	}
	return jinja.Undefined(), fmt.Errorf("UndefinedError: '%s' object has no attribute '%s'", tn, name)
}

func dictMethod(name string, d *jinja.Dict, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, bool, error) {
	switch name {
	case "get":
		if len(args) == 0 {
			return jinja.Undefined(), true, fmt.Errorf("TypeError: get expected at least 1 argument, got 0")
		}
		if v, ok := dictGet(d, args[0]); ok {
			return v, true, nil
		}
		if len(args) > 1 {
			return args[1], true, nil
		}
		return jinja.None(), true, nil
	case "items":
		return markList(dictItems(d), "dict_items"), true, nil
	case "keys":
		keys := make([]jinja.Value, 0, d.Len())
		for _, k := range d.Keys {
			keys = append(keys, keyValue(k))
		}
		return markList(jinja.NewList(keys), "dict_keys"), true, nil
	case "values":
		vals := make([]jinja.Value, 0, d.Len())
		for _, k := range d.Keys {
			vals = append(vals, d.Data[k])
		}
		return markList(jinja.NewList(vals), "dict_values"), true, nil
	case "copy":
		c := jinja.NewDict()
		for _, k := range d.Keys {
			c.AsDict().Set(k, d.Data[k])
		}
		return c, true, nil
	}
	return jinja.Undefined(), false, nil
}

// strArg returns argument i as a string, or an error naming the method.
func strArg(method string, args []jinja.Value, i int) (string, error) {
	if i >= len(args) || !args[i].IsString() {
		got := "nothing"
		if i < len(args) {
			got = pyTypeName(args[i])
		}
		return "", fmt.Errorf("TypeError: %s() argument %d must be str, not %s", method, i+1, got)
	}
	return args[i].AsString(), nil
}

// optChars returns the chars argument of strip and friends: nil for
// whitespace.
func optChars(method string, args []jinja.Value) (*string, error) {
	if len(args) == 0 || args[0].IsNone() {
		return nil, nil
	}
	s, err := strArg(method, args, 0)
	return &s, err
}

func strMethod(name, s string, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, bool, error) {
	str := func(x string) (jinja.Value, bool, error) { return jinja.NewString(x), true, nil }
	boolean := func(b bool) (jinja.Value, bool, error) { return jinja.NewBool(b), true, nil }
	fail := func(err error) (jinja.Value, bool, error) { return jinja.Undefined(), true, err }
	switch name {
	case "strip", "lstrip", "rstrip":
		chars, err := optChars(name, args)
		if err != nil {
			return fail(err)
		}
		cut := func(r rune) bool {
			if chars == nil {
				return pyIsSpace(r)
			}
			return strings.ContainsRune(*chars, r)
		}
		switch name {
		case "strip":
			return str(strings.TrimFunc(s, cut))
		case "lstrip":
			return str(strings.TrimLeftFunc(s, cut))
		}
		return str(strings.TrimRightFunc(s, cut))
	case "split", "rsplit":
		var sep *string
		if v, ok := argAt(args, kwargs, 0, "sep"); ok && !v.IsNone() {
			if !v.IsString() {
				return fail(fmt.Errorf("TypeError: must be str or None, not %s", pyTypeName(v)))
			}
			x := v.AsString()
			if x == "" {
				return fail(fmt.Errorf("ValueError: empty separator"))
			}
			sep = &x
		}
		maxsplit := int64(-1)
		if v, ok := argAt(args, kwargs, 1, "maxsplit"); ok {
			maxsplit = toInt(v)
		}
		var parts []string
		if name == "split" {
			parts = pySplit(s, sep, maxsplit)
		} else {
			parts = pyRSplit(s, sep, maxsplit)
		}
		out := make([]jinja.Value, len(parts))
		for i, p := range parts {
			out[i] = jinja.NewString(p)
		}
		return jinja.NewList(out), true, nil
	case "splitlines":
		parts := pySplitLines(s)
		out := make([]jinja.Value, len(parts))
		for i, p := range parts {
			out[i] = jinja.NewString(p)
		}
		return jinja.NewList(out), true, nil
	case "startswith", "endswith":
		if len(args) == 0 {
			return fail(fmt.Errorf("TypeError: %s() takes at least 1 argument (0 given)", name))
		}
		cands := []jinja.Value{args[0]}
		if args[0].IsList() {
			cands = args[0].AsList().Items
		}
		for _, c := range cands {
			if !c.IsString() {
				return fail(fmt.Errorf("TypeError: %s first arg must be str or a tuple of str, not %s", name, pyTypeName(c)))
			}
			if name == "startswith" && strings.HasPrefix(s, c.AsString()) ||
				name == "endswith" && strings.HasSuffix(s, c.AsString()) {
				return boolean(true)
			}
		}
		return boolean(false)
	case "replace":
		old, err := strArg(name, args, 0)
		if err != nil {
			return fail(err)
		}
		nw, err := strArg(name, args, 1)
		if err != nil {
			return fail(err)
		}
		n := -1
		if len(args) > 2 {
			n = int(toInt(args[2]))
		}
		return str(strings.Replace(s, old, nw, n))
	case "upper":
		return str(strings.ToUpper(s))
	case "lower":
		return str(strings.ToLower(s))
	case "title":
		return str(pyTitle(s))
	case "capitalize":
		return str(pyCapitalize(s))
	case "swapcase":
		return str(strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, s))
	case "find", "rfind", "index", "count":
		sub, err := strArg(name, args, 0)
		if err != nil {
			return fail(err)
		}
		switch name {
		case "count":
			if sub == "" {
				return jinja.NewInt(int64(utf8.RuneCountInString(s) + 1)), true, nil
			}
			return jinja.NewInt(int64(strings.Count(s, sub))), true, nil
		case "rfind":
			i := strings.LastIndex(s, sub)
			if i >= 0 {
				i = utf8.RuneCountInString(s[:i])
			}
			return jinja.NewInt(int64(i)), true, nil
		}
		i := strings.Index(s, sub)
		if i < 0 && name == "index" {
			return fail(fmt.Errorf("ValueError: substring not found"))
		}
		if i >= 0 {
			i = utf8.RuneCountInString(s[:i])
		}
		return jinja.NewInt(int64(i)), true, nil
	case "join":
		if len(args) == 0 {
			return fail(fmt.Errorf("TypeError: join() takes exactly one argument (0 given)"))
		}
		items, err := iterate(args[0])
		if err != nil {
			return fail(err)
		}
		parts := make([]string, len(items))
		for i, it := range items {
			if !it.IsString() {
				return fail(fmt.Errorf("TypeError: sequence item %d: expected str instance, %s found", i, pyTypeName(it)))
			}
			parts[i] = it.AsString()
		}
		return str(strings.Join(parts, s))
	case "format":
		return strFormat(s, args, kwargs)
	case "removeprefix":
		p, err := strArg(name, args, 0)
		if err != nil {
			return fail(err)
		}
		return str(strings.TrimPrefix(s, p))
	case "removesuffix":
		p, err := strArg(name, args, 0)
		if err != nil {
			return fail(err)
		}
		return str(strings.TrimSuffix(s, p))
	case "isdigit", "isdecimal", "isnumeric":
		return boolean(s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) }) < 0)
	case "isalpha":
		return boolean(s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) < 0)
	case "isalnum":
		return boolean(s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) < 0)
	case "isspace":
		return boolean(s != "" && strings.IndexFunc(s, func(r rune) bool { return !pyIsSpace(r) }) < 0)
	case "isupper", "islower":
		cased := false
		for _, r := range s {
			if unicode.IsUpper(r) || unicode.IsTitle(r) {
				if name == "islower" {
					return boolean(false)
				}
				cased = true
			} else if unicode.IsLower(r) {
				if name == "isupper" {
					return boolean(false)
				}
				cased = true
			}
		}
		return boolean(cased)
	}
	return jinja.Undefined(), false, nil
}

// pySplit is Python's str.split(sep, maxsplit); sep nil splits on runs of
// whitespace and drops empty ends.
func pySplit(s string, sep *string, maxsplit int64) []string {
	if sep != nil {
		n := -1
		if maxsplit >= 0 {
			n = int(min(maxsplit, int64(len(s)))) + 1
		}
		return strings.SplitN(s, *sep, n)
	}
	var out []string
	rest := strings.TrimLeftFunc(s, pyIsSpace)
	for rest != "" {
		if maxsplit >= 0 && int64(len(out)) >= maxsplit {
			out = append(out, rest)
			break
		}
		i := strings.IndexFunc(rest, pyIsSpace)
		if i < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:i])
		rest = strings.TrimLeftFunc(rest[i:], pyIsSpace)
	}
	return out
}

// pyRSplit is Python's str.rsplit(sep, maxsplit).
func pyRSplit(s string, sep *string, maxsplit int64) []string {
	if maxsplit < 0 {
		return pySplit(s, sep, -1)
	}
	var out []string
	if sep != nil {
		for int64(len(out)) < maxsplit {
			i := strings.LastIndex(s, *sep)
			if i < 0 {
				break
			}
			out = append(out, s[i+len(*sep):])
			s = s[:i]
		}
		out = append(out, s)
	} else {
		rest := strings.TrimRightFunc(s, pyIsSpace)
		for rest != "" {
			if int64(len(out)) >= maxsplit {
				out = append(out, rest)
				break
			}
			i := strings.LastIndexFunc(rest, pyIsSpace)
			if i < 0 {
				out = append(out, rest)
				break
			}
			_, n := utf8.DecodeRuneInString(rest[i:])
			out = append(out, rest[i+n:])
			rest = strings.TrimRightFunc(rest[:i], pyIsSpace)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// strFormat is a subset of Python's str.format: {}, {0} and {name} fields
// without format specs, and {{ }} escapes.
func strFormat(s string, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, bool, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '}' {
			if i+1 < len(s) && s[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return jinja.Undefined(), true, fmt.Errorf("ValueError: Single '{' encountered in format string")
		}
		field := s[i+1 : i+j]
		i += j
		var v jinja.Value
		switch {
		case field == "":
			if auto >= len(args) {
				return jinja.Undefined(), true, fmt.Errorf("IndexError: Replacement index %d out of range", auto)
			}
			v = args[auto]
			auto++
		case field[0] >= '0' && field[0] <= '9':
			n := int(toInt(jinja.NewString(field)))
			if n >= len(args) {
				return jinja.Undefined(), true, fmt.Errorf("IndexError: Replacement index %d out of range", n)
			}
			v = args[n]
		default:
			kv, ok := kwargs[field]
			if !ok {
				return jinja.Undefined(), true, fmt.Errorf("KeyError: '%s'", field)
			}
			v = kv
		}
		b.WriteString(pyStr(v))
	}
	return jinja.NewString(b.String()), true, nil
}
