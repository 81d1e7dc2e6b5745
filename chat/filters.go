package chat

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// fn is the shape of every callable the library accepts.
type fn = func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error)

// argAt returns the argument at position pos, or the keyword name, and
// whether either was given.
func argAt(args []jinja.Value, kwargs map[string]jinja.Value, pos int, name string) (jinja.Value, bool) {
	if pos < len(args) {
		return args[pos], true
	}
	if v, ok := kwargs[name]; ok {
		return v, true
	}
	return jinja.Undefined(), false
}

// filters are jinja2's built-in filters with Python's semantics (the
// library's own differ in ways templates can see: tojson reorders keys
// under indent, None prints as "", and so on). Each receives the filtered
// value as args[0]. The compiler rejects any other filter name, as jinja2
// does.
var filters map[string]fn

func init() {
	filters = map[string]fn{
		"tojson": filterToJSON,
		"string": filterString,
		"safe":   filterSafe,
		"escape": filterEscape,
		"e":      filterEscape,
		"forceescape": func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return newMarkup(escapeHTML(pyStr(a[0]))), nil
		},
		"join":       filterJoin,
		"default":    filterDefault,
		"d":          filterDefault,
		"list":       filterList,
		"items":      filterItems,
		"dictsort":   filterDictsort,
		"length":     filterLength,
		"count":      filterLength,
		"trim":       filterTrim,
		"first":      filterFirst,
		"last":       filterLast,
		"upper":      strFilter(strings.ToUpper),
		"lower":      strFilter(strings.ToLower),
		"capitalize": strFilter(pyCapitalize),
		"title":      strFilter(jinjaTitle),
		"indent":     filterIndent,
		"replace":    filterReplace,
		"int":        filterInt,
		"float":      filterFloat,
		"abs":        filterAbs,
		"round":      filterRound,
		"map":        filterMap,
		"select":     selectFilter(false, false),
		"reject":     selectFilter(true, false),
		"selectattr": selectFilter(false, true),
		"rejectattr": selectFilter(true, true),
		"unique":     filterUnique,
		"sort":       filterSort,
		"reverse":    filterReverse,
		"sum":        filterSum,
		"min":        minMaxFilter(false),
		"max":        minMaxFilter(true),
		"attr":       filterAttr,
		"wordcount": func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewInt(int64(len(pySplit(pyStr(a[0]), nil, -1)))), nil
		},
		"center": filterCenter,
		"batch":  filterBatch,
		"format": filterFormat,
		"pprint": func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewString(pyRepr(a[0])), nil
		},
		"from_json": filterFromJSON,
		"fromjson":  filterFromJSON,
	}
	// jinja2 filters no chat template we know uses: known, so templates
	// that merely mention them still compile as in jinja2, but failing
	// when run.
	for _, name := range []string{"filesizeformat", "groupby", "random", "slice", "striptags",
		"truncate", "urlencode", "urlize", "wordwrap", "xmlattr"} {
		filters[name] = func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			return jinja.Undefined(), fmt.Errorf("the %s filter is not supported", name)
		}
	}
}

// markupFilters see Markup arguments as Markup; every other filter gets
// them as plain strings.
var markupFilters = setOf("string", "safe", "escape", "e", "forceescape", "indent")

// filterString is jinja2's string filter (soft_str: Markup stays Markup).
func filterString(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if isMarkup(a[0]) {
		return a[0], nil
	}
	return jinja.NewString(pyStr(a[0])), nil
}

func filterSafe(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if isMarkup(a[0]) {
		return a[0], nil
	}
	return newMarkup(pyStr(a[0])), nil
}

func filterEscape(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if isMarkup(a[0]) {
		return a[0], nil
	}
	return newMarkup(escapeHTML(pyStr(a[0]))), nil
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False). Unlike jinja2's own it
// does not HTML-escape, and unlike the library's it keeps key order under
// indent.
func filterToJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	o := jsonOptions{itemSep: ", ", keySep: ": "}
	if v, ok := argAt(args, kwargs, 1, "ensure_ascii"); ok {
		o.ensureASCII = v.IsTruthy()
	}
	if v, ok := argAt(args, kwargs, 2, "indent"); ok && !v.IsNone() {
		var s string
		switch {
		case v.IsString():
			s = v.AsString()
		case v.IsInt():
			s = strings.Repeat(" ", int(max(0, min(v.AsInt(), 1<<10))))
		default:
			return jinja.Undefined(), fmt.Errorf("TypeError: tojson indent must be an int or str, not %s", pyTypeName(v))
		}
		o.indent = &s
		o.itemSep = ","
	}
	if v, ok := argAt(args, kwargs, 3, "separators"); ok && !v.IsNone() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Items[0].IsString() || !v.AsList().Items[1].IsString() {
			return jinja.Undefined(), fmt.Errorf("ValueError: tojson separators must be a pair of strings")
		}
		o.itemSep = v.AsList().Items[0].AsString()
		o.keySep = v.AsList().Items[1].AsString()
	}
	if v, ok := argAt(args, kwargs, 4, "sort_keys"); ok {
		o.sortKeys = v.IsTruthy()
	}
	s, err := pyJSON(args[0], o)
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(s), nil
}

func filterFromJSON(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if !args[0].IsString() {
		return jinja.Undefined(), fmt.Errorf("TypeError: the JSON object must be str, not %s", pyTypeName(args[0]))
	}
	v, err := jsonToValue([]byte(args[0].AsString()))
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("JSONDecodeError: %v", err)
	}
	return v, nil
}

// iterate lists what a Python for loop over v would yield: list items,
// dict keys, string characters; undefined iterates as empty.
func iterate(v jinja.Value) ([]jinja.Value, error) {
	switch {
	case v.IsList():
		return v.AsList().Items, nil
	case v.IsDict():
		keys := make([]jinja.Value, 0, v.AsDict().Len())
		for _, k := range v.AsDict().Keys {
			keys = append(keys, keyValue(k))
		}
		return keys, nil
	case v.IsString():
		var out []jinja.Value
		for _, r := range v.AsString() {
			out = append(out, jinja.NewString(string(r)))
		}
		return out, nil
	case v.IsUndefined():
		return nil, nil
	}
	return nil, fmt.Errorf("TypeError: '%s' object is not iterable", pyTypeName(v))
}

// iterateIfTrue is iterate for the filters jinja2 guards with "if value:",
// which turns None or an empty value into an empty result.
func iterateIfTrue(v jinja.Value) ([]jinja.Value, error) {
	if !v.IsTruthy() {
		return nil, nil
	}
	return iterate(v)
}

// getAttr is jinja2's environment.getattr/getitem for a name: mapping key,
// else undefined.
func getAttr(v jinja.Value, name string) jinja.Value {
	if v.IsDict() {
		if x, ok := v.AsDict().Get(name); ok {
			return x
		}
	}
	if v.IsList() {
		if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < v.AsList().Len() {
			return v.AsList().Items[i]
		}
	}
	return jinja.Undefined()
}

// attrPath follows a dotted attribute path as jinja2's make_attrgetter does.
func attrPath(v jinja.Value, path string) jinja.Value {
	for part := range strings.SplitSeq(path, ".") {
		v = getAttr(v, part)
	}
	return v
}

func filterJoin(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	sep := ""
	if v, ok := argAt(args, kwargs, 1, "d"); ok {
		sep = pyStr(v)
	}
	items, err := iterate(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	attr, hasAttr := argAt(args, kwargs, 2, "attribute")
	parts := make([]string, len(items))
	for i, it := range items {
		if hasAttr && !attr.IsNone() {
			it = attrPath(it, pyStr(attr))
		}
		parts[i] = pyStr(it)
	}
	return jinja.NewString(strings.Join(parts, sep)), nil
}

func filterDefault(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	def, ok := argAt(args, kwargs, 1, "default_value")
	if !ok {
		def = jinja.NewString("")
	}
	boolean, _ := argAt(args, kwargs, 2, "boolean")
	if args[0].IsUndefined() || boolean.IsTruthy() && !args[0].IsTruthy() {
		return def, nil
	}
	return args[0], nil
}

func filterList(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewList(slices.Clone(items)), nil
}

func filterItems(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v := args[0]
	if v.IsUndefined() {
		return markList(jinja.NewList(nil), "generator"), nil
	}
	if !v.IsDict() {
		return jinja.Undefined(), fmt.Errorf("TypeError: Can only get item pairs from a mapping.")
	}
	return markList(dictItems(v.AsDict()), "generator"), nil
}

func dictItems(d *jinja.Dict) jinja.Value {
	items := make([]jinja.Value, 0, d.Len())
	for _, k := range d.Keys {
		items = append(items, newTuple([]jinja.Value{keyValue(k), d.Data[k]}))
	}
	return jinja.NewList(items)
}

// filterDictsort sorts a mapping's pairs by key (or value), case-folded
// unless case_sensitive, as jinja2 does.
func filterDictsort(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if !args[0].IsDict() {
		return jinja.Undefined(), fmt.Errorf("TypeError: dictsort expects a mapping, got %s", pyTypeName(args[0]))
	}
	cs, _ := argAt(args, kwargs, 1, "case_sensitive")
	by, hasBy := argAt(args, kwargs, 2, "by")
	rev, _ := argAt(args, kwargs, 3, "reverse")
	pos := 0
	if hasBy && pyStr(by) == "value" {
		pos = 1
	} else if hasBy && pyStr(by) != "key" {
		return jinja.Undefined(), fmt.Errorf("FilterArgumentError: You can only sort by either \"key\" or \"value\"")
	}
	items := slices.Clone(dictItems(args[0].AsDict()).AsList().Items)
	var sortErr error
	slices.SortStableFunc(items, func(a, b jinja.Value) int {
		x, y := sortKey(a.AsList().Items[pos], cs.IsTruthy()), sortKey(b.AsList().Items[pos], cs.IsTruthy())
		c, err := pyCompare(x, y)
		if err != nil {
			sortErr = err
		}
		if rev.IsTruthy() {
			c = -c
		}
		return c
	})
	if sortErr != nil {
		return jinja.Undefined(), sortErr
	}
	return jinja.NewList(items), nil
}

// sortKey lower-cases strings unless the comparison is case sensitive.
func sortKey(v jinja.Value, caseSensitive bool) jinja.Value {
	if !caseSensitive && v.IsString() {
		return jinja.NewString(strings.ToLower(v.AsString()))
	}
	return v
}

func pyCompare(a, b jinja.Value) (int, error) {
	if lt, err := pyLess(a, b); err != nil {
		return 0, err
	} else if lt {
		return -1, nil
	}
	if gt, err := pyLess(b, a); err != nil {
		return 0, err
	} else if gt {
		return 1, nil
	}
	return 0, nil
}

func filterLength(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v := args[0]
	if k := kindOf(v); k != "" && !hasLen(k) {
		return jinja.Undefined(), fmt.Errorf("TypeError: object of type '%s' has no len()", k)
	}
	switch {
	case v.IsString():
		return jinja.NewInt(int64(len([]rune(v.AsString())))), nil
	case v.IsList():
		return jinja.NewInt(int64(v.AsList().Len())), nil
	case v.IsDict():
		return jinja.NewInt(int64(v.AsDict().Len())), nil
	case v.IsUndefined():
		return jinja.NewInt(0), nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: object of type '%s' has no len()", pyTypeName(v))
}

func filterTrim(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	s := pyStr(args[0])
	if c, ok := argAt(args, kwargs, 1, "chars"); ok && !c.IsNone() {
		return jinja.NewString(strings.Trim(s, pyStr(c))), nil
	}
	return jinja.NewString(strings.TrimFunc(s, pyIsSpace)), nil
}

func filterFirst(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil || len(items) == 0 {
		return jinja.Undefined(), err
	}
	return items[0], nil
}

func filterLast(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil || len(items) == 0 {
		return jinja.Undefined(), err
	}
	return items[len(items)-1], nil
}

func strFilter(f func(string) string) fn {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return jinja.NewString(f(pyStr(args[0]))), nil
	}
}

// pyCapitalize is Python's str.capitalize: first rune upper, rest lower.
func pyCapitalize(s string) string {
	r := []rune(s)
	for i := range r {
		if i == 0 {
			r[i] = unicode.ToUpper(r[i])
		} else {
			r[i] = unicode.ToLower(r[i])
		}
	}
	return string(r)
}

// jinjaTitle is jinja2's title filter: capitalize each word, where words
// start after whitespace or one of -({[<.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		if pyIsSpace(r) || strings.ContainsRune("-({[<", r) {
			b.WriteRune(r)
			start = true
			continue
		}
		if start {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
		start = false
	}
	return b.String()
}

// pyTitle is Python's str.title: a cased rune is upper-cased after an
// uncased one and lower-cased after a cased one.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		cased := unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
		switch {
		case cased && !prevCased:
			b.WriteRune(unicode.ToTitle(r))
		case cased:
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
		prevCased = cased
	}
	return b.String()
}

func filterIndent(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	s := pyStr(args[0])
	ind := "    "
	if w, ok := argAt(args, kwargs, 1, "width"); ok {
		if w.IsString() {
			ind = w.AsString()
		} else {
			ind = strings.Repeat(" ", int(max(0, min(toInt(w), 1<<10))))
		}
	}
	first, _ := argAt(args, kwargs, 2, "first")
	blank, _ := argAt(args, kwargs, 3, "blank")
	// jinja2 appends a newline before splitlines so a trailing newline
	// survives, then indents every line but the first (blank lines only
	// when blank=True).
	lines := pySplitLines(s + "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
			if l != "" || blank.IsTruthy() {
				b.WriteString(ind)
			}
		}
		b.WriteString(l)
	}
	out := b.String()
	if first.IsTruthy() {
		out = ind + out
	}
	if isMarkup(args[0]) {
		return newMarkup(out), nil
	}
	return jinja.NewString(out), nil
}

// pySplitLines is Python's str.splitlines() without keepends.
func pySplitLines(s string) []string {
	var out []string
	start := 0
	rs := []rune(s)
	var b strings.Builder
	_ = start
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '\r':
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			fallthrough
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

func filterReplace(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	old, ok1 := argAt(args, kwargs, 1, "old")
	nw, ok2 := argAt(args, kwargs, 2, "new")
	if !ok1 || !ok2 {
		return jinja.Undefined(), fmt.Errorf("TypeError: replace() missing required arguments")
	}
	n := -1
	if c, ok := argAt(args, kwargs, 3, "count"); ok && !c.IsNone() {
		n = int(toInt(c))
	}
	return jinja.NewString(strings.Replace(pyStr(args[0]), pyStr(old), pyStr(nw), n)), nil
}

// toInt converts like jinja2's int filter with default 0.
func toInt(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		f := v.AsFloat()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0
		}
		return int64(f)
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
		return 0
	case v.IsString():
		s := strings.TrimFunc(v.AsString(), pyIsSpace)
		if i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return int64(f)
		}
	}
	return 0
}

func filterInt(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	def, ok := argAt(args, kwargs, 1, "default")
	if ok && args[0].IsString() {
		s := strings.TrimFunc(args[0].AsString(), pyIsSpace)
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return def, nil
		}
	}
	return jinja.NewInt(toInt(args[0])), nil
}

func filterFloat(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	v := args[0]
	if n, ok := pyNumber(v); ok {
		return jinja.NewFloat(n), nil
	}
	if v.IsString() {
		if f, err := strconv.ParseFloat(strings.TrimFunc(v.AsString(), pyIsSpace), 64); err == nil {
			return jinja.NewFloat(f), nil
		}
	}
	if def, ok := argAt(args, kwargs, 1, "default"); ok {
		return def, nil
	}
	return jinja.NewFloat(0), nil
}

func filterAbs(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v := args[0]
	switch {
	case v.IsInt():
		if v.AsInt() < 0 {
			return jinja.NewInt(-v.AsInt()), nil
		}
		return v, nil
	case v.IsFloat():
		return jinja.NewFloat(math.Abs(v.AsFloat())), nil
	case v.IsBool():
		return jinja.NewInt(toInt(v)), nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: bad operand type for abs(): '%s'", pyTypeName(v))
}

func filterRound(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	f, ok := pyNumber(args[0])
	if !ok {
		return jinja.Undefined(), fmt.Errorf("TypeError: round expects a number, got %s", pyTypeName(args[0]))
	}
	prec := int64(0)
	if p, ok := argAt(args, kwargs, 1, "precision"); ok {
		prec = toInt(p)
	}
	method := "common"
	if m, ok := argAt(args, kwargs, 2, "method"); ok {
		method = pyStr(m)
	}
	pow := math.Pow(10, float64(prec))
	switch method {
	case "common":
		// jinja2 uses Python's round(), which rounds half to even.
		f = math.RoundToEven(f*pow) / pow
	case "ceil":
		f = math.Ceil(f*pow) / pow
	case "floor":
		f = math.Floor(f*pow) / pow
	default:
		return jinja.Undefined(), fmt.Errorf("FilterArgumentError: method must be common, ceil or floor")
	}
	return jinja.NewFloat(f), nil
}

// filterMap supports map(attribute=...) and map('filtername', args...).
func filterMap(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	v, err := filterMapList(args, kwargs)
	if err != nil {
		return v, err
	}
	return markList(v, "generator"), nil
}

func filterMapList(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterateIfTrue(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	out := make([]jinja.Value, len(items))
	if attr, ok := kwargs["attribute"]; ok {
		def, hasDef := kwargs["default"]
		for i, it := range items {
			v := attrPath(it, pyStr(attr))
			if v.IsUndefined() && hasDef {
				v = def
			}
			out[i] = v
		}
		return jinja.NewList(out), nil
	}
	if len(args) < 2 {
		return jinja.Undefined(), fmt.Errorf("FilterArgumentError: map requires a filter argument")
	}
	name := pyStr(args[1])
	f, ok := filters[name]
	if !ok {
		return jinja.Undefined(), fmt.Errorf("TemplateRuntimeError: No filter named %q", name)
	}
	for i, it := range items {
		v, err := f(append([]jinja.Value{it}, args[2:]...), kwargs)
		if err != nil {
			return jinja.Undefined(), err
		}
		out[i] = v
	}
	return jinja.NewList(out), nil
}

// selectFilter builds select/reject (by test on the item) and
// selectattr/rejectattr (by test on an attribute of the item).
func selectFilter(reject, byAttr bool) fn {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		items, err := iterateIfTrue(args[0])
		if err != nil {
			return jinja.Undefined(), err
		}
		rest := args[1:]
		attr := ""
		if byAttr {
			if len(rest) == 0 {
				return jinja.Undefined(), fmt.Errorf("FilterArgumentError: missing attribute for %s", map[bool]string{false: "selectattr", true: "rejectattr"}[reject])
			}
			attr = pyStr(rest[0])
			rest = rest[1:]
		}
		var test fn
		if len(rest) > 0 {
			name := pyStr(rest[0])
			t, ok := tests[name]
			if !ok {
				return jinja.Undefined(), fmt.Errorf("TemplateRuntimeError: No test named %q", name)
			}
			test = t
			rest = rest[1:]
		}
		var out []jinja.Value
		for _, it := range items {
			v := it
			if byAttr {
				v = attrPath(it, attr)
			}
			var ok bool
			if test == nil {
				ok = v.IsTruthy()
			} else {
				r, err := test(append([]jinja.Value{v}, rest...), nil)
				if err != nil {
					return jinja.Undefined(), err
				}
				ok = r.IsTruthy()
			}
			if ok != reject {
				out = append(out, it)
			}
		}
		return markList(jinja.NewList(out), "generator"), nil
	}
}

func filterUnique(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	cs, _ := argAt(args, kwargs, 1, "case_sensitive")
	attr, hasAttr := argAt(args, kwargs, 2, "attribute")
	var out, seen []jinja.Value
	for _, it := range items {
		k := it
		if hasAttr && !attr.IsNone() {
			k = attrPath(it, pyStr(attr))
		}
		k = sortKey(k, cs.IsTruthy())
		if slices.ContainsFunc(seen, func(s jinja.Value) bool { return pyEqual(s, k) }) {
			continue
		}
		seen = append(seen, k)
		out = append(out, it)
	}
	return markList(jinja.NewList(out), "generator"), nil
}

func filterSort(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	items = slices.Clone(items)
	rev, _ := argAt(args, kwargs, 1, "reverse")
	cs, _ := argAt(args, kwargs, 2, "case_sensitive")
	attr, hasAttr := argAt(args, kwargs, 3, "attribute")
	var sortErr error
	slices.SortStableFunc(items, func(a, b jinja.Value) int {
		if hasAttr && !attr.IsNone() {
			a, b = attrPath(a, pyStr(attr)), attrPath(b, pyStr(attr))
		}
		c, err := pyCompare(sortKey(a, cs.IsTruthy()), sortKey(b, cs.IsTruthy()))
		if err != nil {
			sortErr = err
		}
		if rev.IsTruthy() {
			c = -c
		}
		return c
	})
	if sortErr != nil {
		return jinja.Undefined(), sortErr
	}
	return jinja.NewList(items), nil
}

func filterReverse(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v := args[0]
	if v.IsString() {
		r := []rune(v.AsString())
		slices.Reverse(r)
		return jinja.NewString(string(r)), nil
	}
	items, err := iterate(v)
	if err != nil {
		return jinja.Undefined(), err
	}
	items = slices.Clone(items)
	slices.Reverse(items)
	if v.IsList() && kindOf(v) == "" {
		return markList(jinja.NewList(items), "list_reverseiterator"), nil
	}
	return jinja.NewList(items), nil
}

func filterSum(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	attr, hasAttr := argAt(args, kwargs, 1, "attribute")
	total := jinja.NewInt(0)
	if s, ok := argAt(args, kwargs, 2, "start"); ok {
		total = s
	}
	for _, it := range items {
		if hasAttr && !attr.IsNone() {
			it = attrPath(it, pyStr(attr))
		}
		a, ok1 := pyNumber(total)
		b, ok2 := pyNumber(it)
		if !ok1 || !ok2 {
			return jinja.Undefined(), fmt.Errorf("TypeError: unsupported operand type(s) for +: '%s' and '%s'", pyTypeName(total), pyTypeName(it))
		}
		if (total.IsInt() || total.IsBool()) && (it.IsInt() || it.IsBool()) {
			total = jinja.NewInt(toInt(total) + toInt(it))
		} else {
			total = jinja.NewFloat(a + b)
		}
	}
	return total, nil
}

func minMaxFilter(isMax bool) fn {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		items, err := iterate(args[0])
		if err != nil || len(items) == 0 {
			return jinja.Undefined(), err
		}
		cs, _ := argAt(args, kwargs, 1, "case_sensitive")
		attr, hasAttr := argAt(args, kwargs, 2, "attribute")
		key := func(v jinja.Value) jinja.Value {
			if hasAttr && !attr.IsNone() {
				v = attrPath(v, pyStr(attr))
			}
			return sortKey(v, cs.IsTruthy())
		}
		best := items[0]
		for _, it := range items[1:] {
			c, err := pyCompare(key(it), key(best))
			if err != nil {
				return jinja.Undefined(), err
			}
			if isMax && c > 0 || !isMax && c < 0 {
				best = it
			}
		}
		return best, nil
	}
}

// filterAttr is jinja2's attr filter: a Python attribute only, never a
// dict item.
func filterAttr(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 {
		return jinja.Undefined(), fmt.Errorf("TypeError: attr() missing name")
	}
	obj, name := args[0], pyStr(args[1])
	if obj.IsDict() && kindOf(obj) == "" {
		if dictMethods[name] && !strings.HasPrefix(name, "_") {
			return boundMethod(obj, name), nil
		}
		return jinja.Undefined(), nil
	}
	if obj.IsUndefined() {
		return jinja.Undefined(), nil
	}
	return getattr(obj, name, "")
}

func filterCenter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	s := []rune(pyStr(args[0]))
	width := int64(80)
	if w, ok := argAt(args, kwargs, 1, "width"); ok {
		width = toInt(w)
	}
	n := int(min(width, 1<<16)) - len(s)
	if n <= 0 {
		return jinja.NewString(string(s)), nil
	}
	// Python puts the odd pad on the left when the width is odd.
	left := n/2 + (n & int(width) & 1)
	return jinja.NewString(strings.Repeat(" ", left) + string(s) + strings.Repeat(" ", n-left)), nil
}

func filterBatch(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	n, _ := argAt(args, kwargs, 1, "linecount")
	size := int(toInt(n))
	if size <= 0 {
		return jinja.Undefined(), fmt.Errorf("ValueError: batch size must be positive")
	}
	fill, hasFill := argAt(args, kwargs, 2, "fill_with")
	var out []jinja.Value
	for i := 0; i < len(items); i += size {
		b := slices.Clone(items[i:min(i+size, len(items))])
		for hasFill && !fill.IsNone() && len(b) < size {
			b = append(b, fill)
		}
		out = append(out, jinja.NewList(b))
	}
	return markList(jinja.NewList(out), "generator"), nil
}

// filterFormat is jinja2's format filter: printf-style "%s" formatting.
func filterFormat(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	f := pyStr(args[0])
	rest := args[1:]
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case '%':
			b.WriteByte('%')
		case 's', 'd', 'r', 'i':
			if len(rest) == 0 {
				return jinja.Undefined(), fmt.Errorf("TypeError: not enough arguments for format string")
			}
			switch f[i] {
			case 'r':
				b.WriteString(pyRepr(rest[0]))
			case 'd', 'i':
				b.WriteString(strconv.FormatInt(toInt(rest[0]), 10))
			default:
				b.WriteString(pyStr(rest[0]))
			}
			rest = rest[1:]
		default:
			return jinja.Undefined(), fmt.Errorf("ValueError: unsupported format character %q", f[i])
		}
	}
	return jinja.NewString(b.String()), nil
}
