package grammar

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// SchemaError is a JSON Schema the engine refuses: Keyword names the
// keyword it cannot honour (or that is invalid), Path where it is.
type SchemaError struct {
	Keyword string
	Path    string
	Msg     string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("json schema: keyword %q at %s: %s", e.Keyword, e.Path, e.Msg)
}

func schemaErr(kw, path, format string, args ...any) *SchemaError {
	if path == "" {
		path = "#"
	}
	return &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Limits on what a schema may ask for.
const (
	maxStringLen = 64   // longer maxLength is capped (outputs stay valid)
	maxArrayLen  = 64   // likewise maxItems and maxProperties
	maxNumDigits = 15   // digits of an unbounded integer part or fraction
	maxConvDepth = 200  // nesting of schemas (not of $ref recursion)
	cacheLimit   = 4096 // compiled grammars kept
)

var cache struct {
	sync.Mutex
	m map[[32]byte]cached
}

type cached struct {
	g   *Grammar
	err error
}

// cachedCompile returns the grammar for key, compiling it once.
func cachedCompile(kind string, src []byte, compile func() (*Grammar, error)) (*Grammar, error) {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(src)
	var k [32]byte
	h.Sum(k[:0])
	cache.Lock()
	if c, ok := cache.m[k]; ok {
		cache.Unlock()
		return c.g, c.err
	}
	cache.Unlock()
	g, err := compile()
	cache.Lock()
	defer cache.Unlock()
	if cache.m == nil || len(cache.m) >= cacheLimit {
		cache.m = map[[32]byte]cached{}
	}
	cache.m[k] = cached{g, err}
	return g, err
}

// FromJSONSchema compiles a JSON Schema (draft-04 to 2020-12) to a
// grammar of the JSON documents it accepts, written compactly (no
// whitespace). Keywords are honoured exactly or conservatively (the
// grammar then allows a subset of the valid documents); one that cannot
// be is a *SchemaError naming it. Compiled grammars are cached by the
// schema's hash.
func FromJSONSchema(schema []byte) (*Grammar, error) {
	return cachedCompile("schema", schema, func() (*Grammar, error) { return compileSchema(schema) })
}

// compileSchema is FromJSONSchema without the cache.
func compileSchema(schema []byte) (*Grammar, error) {
	v, err := decodeJSON(schema)
	if err != nil {
		return nil, schemaErr("", "#", "invalid JSON: %v", err)
	}
	c := newConv(v)
	seq, err := c.schema(v, "#")
	if err != nil {
		return nil, err
	}
	return c.b.finish(seq)
}

// JSONObject is the grammar of any JSON object (response_format
// json_object).
func JSONObject() *Grammar {
	g, _ := cachedCompile("json_object", nil, func() (*Grammar, error) {
		c := newConv(true)
		return c.b.finish(c.anyObject())
	})
	return g
}

// Choice is the grammar of exactly one of the strings.
func Choice(options []string) (*Grammar, error) {
	if len(options) == 0 {
		return nil, fmt.Errorf("choice: no options")
	}
	src, _ := json.Marshal(options)
	return cachedCompile("choice", src, func() (*Grammar, error) {
		b := newBuilder()
		var alts [][]elem
		for _, o := range options {
			alts = append(alts, b.lit(o))
		}
		return b.finish(b.alt(alts...))
	})
}

// conv converts one schema document.
type conv struct {
	b      *builder
	root   any
	draft4 bool // draft-04 (boolean exclusive bounds)
	old    bool // draft 7 or older: $ref overrides its siblings
	refs   map[string]int32
	depth  int
	anyVal []elem
	chars  []elem
}

func newConv(root any) *conv {
	c := schemaConv(newBuilder(), root)
	// The prelude: rules built first, in the same order, by every JSON
	// grammar, so their positions' token masks are shared by all.
	c.anyValue()
	c.b.prelude = len(c.b.rules)
	return c
}

// schemaConv converts root's schemas into b (which may hold others).
func schemaConv(b *builder, root any) *conv {
	c := &conv{b: b, root: root, refs: map[string]int32{}, old: true}
	if o, ok := root.(*object); ok {
		if s, ok := o.vals["$schema"].(string); ok {
			c.draft4 = strings.Contains(s, "draft-04") || strings.Contains(s, "draft-03")
			c.old = !strings.Contains(s, "2019-09") && !strings.Contains(s, "2020-12")
		}
	}
	return c
}

// annotations and other keywords that assert nothing.
var annotation = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "id": true, "$comment": true, "deprecated": true, "readOnly": true,
	"writeOnly": true, "definitions": true, "$defs": true, "$anchor": true,
	"contentMediaType": true, "contentEncoding": true, "contentSchema": true,
	"$vocabulary": true, "$dynamicAnchor": true, "$recursiveAnchor": true,
	"unevaluatedProperties": true, // outputs hold only evaluated properties
}

// assertion lists the keywords that constrain a value.
var assertion = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "patternProperties": true, "propertyNames": true,
	"minProperties": true, "maxProperties": true, "dependencies": true,
	"dependentRequired": true, "dependentSchemas": true, "items": true, "prefixItems": true,
	"additionalItems": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"contains": true, "minContains": true, "maxContains": true, "minLength": true,
	"maxLength": true, "pattern": true, "format": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "allOf": true,
	"anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"$ref": true, "unevaluatedItems": true, "$dynamicRef": true, "$recursiveRef": true,
}

// unsupported are assertions refused by name.
var unsupported = []string{"contains", "minContains", "maxContains", "unevaluatedItems", "$dynamicRef", "$recursiveRef"}

func hasAssertions(s *object) bool {
	for _, k := range s.keys {
		if assertion[k] {
			return true
		}
	}
	return false
}

// schema is the grammar of the values v (a schema) accepts.
func (c *conv) schema(v any, path string) ([]elem, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxConvDepth {
		return nil, schemaErr("$ref", path, "schemas nest too deeply")
	}
	if c.b.err != nil {
		return nil, schemaErr("", path, "%v", c.b.err)
	}
	switch x := v.(type) {
	case bool:
		if x {
			return c.anyValue(), nil
		}
		return nil, schemaErr("false", path, "the schema false accepts nothing")
	case *object:
		return c.object(x, path)
	}
	return nil, schemaErr("", path, "a schema must be an object or a boolean")
}

func (c *conv) object(s *object, path string) ([]elem, error) {
	for _, k := range unsupported {
		if _, ok := s.get(k); ok {
			return nil, schemaErr(k, path, "not supported")
		}
	}
	if ref, ok := s.get("$ref"); ok {
		r, ok := ref.(string)
		if !ok {
			return nil, schemaErr("$ref", path, "must be a string")
		}
		rest := s.clone()
		rest.del("$ref")
		if c.old || !hasAssertions(rest) {
			return c.ref(r, path)
		}
		target, err := c.resolve(r, path)
		if err != nil {
			return nil, err
		}
		m, err := c.merge(rest, target, path)
		if err != nil {
			return nil, err
		}
		return c.schema(m, path)
	}
	if all, ok := s.get("allOf"); ok {
		return c.allOf(s, all, path)
	}
	if _, ok := s.get("if"); ok {
		return c.ifThenElse(s, path)
	}
	if _, ok := s.get("anyOf"); ok {
		return c.anyOf(s, "anyOf", path)
	}
	if _, ok := s.get("oneOf"); ok {
		return c.anyOf(s, "oneOf", path)
	}
	return c.plain(s, path)
}

// resolve follows a local JSON pointer reference.
func (c *conv) resolve(ref, path string) (any, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, schemaErr("$ref", path, "only local references (#/...) are supported, got %q", ref)
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, schemaErr("$ref", path, "bad reference %q", ref)
	}
	var cur any = c.root
	if frag == "" {
		return cur, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, schemaErr("$ref", path, "anchor references are not supported: %q", ref)
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case *object:
			v, ok := x.get(tok)
			if !ok {
				return nil, schemaErr("$ref", path, "reference %q not found", ref)
			}
			cur = v
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return nil, schemaErr("$ref", path, "reference %q not found", ref)
			}
			cur = x[i]
		default:
			return nil, schemaErr("$ref", path, "reference %q not found", ref)
		}
	}
	return cur, nil
}

// ref is a rule for the referenced schema (recursion allowed).
func (c *conv) ref(ref, path string) ([]elem, error) {
	if r, ok := c.refs[ref]; ok {
		return []elem{{kRef, r}}, nil
	}
	target, err := c.resolve(ref, path)
	if err != nil {
		return nil, err
	}
	r := c.b.newRule(ref)
	c.refs[ref] = r
	seq, err := c.schema(target, ref)
	if err != nil {
		delete(c.refs, ref)
		return nil, err
	}
	c.b.define(r, [][]elem{seq})
	return []elem{{kRef, r}}, nil
}

// deref follows $ref until a schema without one (draft-7 semantics).
func (c *conv) deref(v any, path string) (any, error) {
	for range 32 {
		o, ok := v.(*object)
		if !ok {
			return v, nil
		}
		ref, ok := o.vals["$ref"].(string)
		if !ok {
			return v, nil
		}
		t, err := c.resolve(ref, path)
		if err != nil {
			return nil, err
		}
		if !c.old {
			rest := o.clone()
			rest.del("$ref")
			if hasAssertions(rest) {
				return c.merge(rest, t, path)
			}
		}
		v = t
	}
	return nil, schemaErr("$ref", path, "reference chain too long")
}

func (c *conv) allOf(s *object, all any, path string) ([]elem, error) {
	list, ok := all.([]any)
	if !ok || len(list) == 0 {
		return nil, schemaErr("allOf", path, "must be a non-empty array")
	}
	m := s.clone()
	m.del("allOf")
	var acc any = m
	for i, sub := range list {
		var err error
		acc, err = c.merge(acc, sub, fmt.Sprintf("%s/allOf/%d", path, i))
		if err != nil {
			return nil, err
		}
	}
	return c.schema(acc, path)
}

func (c *conv) ifThenElse(s *object, path string) ([]elem, error) {
	base := s.clone()
	ifs, _ := base.get("if")
	then, hasThen := base.get("then")
	els, hasElse := base.get("else")
	for _, k := range []string{"if", "then", "else"} {
		base.del(k)
	}
	switch {
	case hasThen:
		// Outputs that satisfy if and then.
		m, err := c.merge(base, ifs, path+"/if")
		if err == nil {
			var mm any
			mm, err = c.merge(m, then, path+"/then")
			if err == nil {
				seq, err := c.schema(mm, path)
				if err == nil {
					return seq, nil
				}
			}
		}
		if !hasElse {
			return nil, schemaErr("if", path, "cannot combine if and then: %v", err)
		}
		fallthrough
	case hasElse:
		// Outputs that leave out a key if requires, and satisfy else.
		is, err := c.deref(ifs, path)
		if err != nil {
			return nil, err
		}
		io, _ := is.(*object)
		req := stringList(io, "required")
		for _, k := range req {
			if slices.Contains(stringList(base, "required"), k) {
				continue
			}
			b2 := base.clone()
			if p, ok := b2.vals["properties"].(*object); ok {
				p = p.clone()
				p.del(k)
				b2.vals["properties"] = p
			}
			b2.set("not", mustObject(map[string]any{"required": []any{k}}))
			m, err := c.merge(b2, els, path+"/else")
			if err != nil {
				return nil, err
			}
			return c.schema(m, path)
		}
		return nil, schemaErr("else", path, "only an if that requires a key can be made false")
	}
	return c.schema(base, path) // if alone asserts nothing
}

func mustObject(m map[string]any) *object {
	o := newObject()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.set(k, m[k])
	}
	return o
}

func stringList(o *object, k string) []string {
	v, _ := o.get(k)
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// anyOf is the union of the branches, each with the sibling keywords;
// a branch that cannot be compiled is left out (a subset stays valid).
// For oneOf, only branches whose outputs provably fail every other branch
// are kept.
func (c *conv) anyOf(s *object, kw, path string) ([]elem, error) {
	raw, _ := s.get(kw)
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, schemaErr(kw, path, "must be a non-empty array")
	}
	base := s.clone()
	base.del(kw)
	plainBase := !hasAssertions(base)
	var alts [][]elem
	var first error
	for i, br := range list {
		bp := fmt.Sprintf("%s/%s/%d", path, kw, i)
		var sub any = br
		if !plainBase {
			m, err := c.merge(base, br, bp)
			if err != nil {
				first = cmpErr(first, err)
				continue
			}
			sub = m
		}
		if kw == "oneOf" {
			if err := c.exclusive(sub, list, i, bp); err != nil {
				first = cmpErr(first, err)
				continue
			}
		}
		seq, err := c.schema(sub, bp)
		if err != nil {
			first = cmpErr(first, err)
			continue
		}
		alts = append(alts, seq)
	}
	if len(alts) == 0 {
		return nil, first
	}
	return c.b.alt(alts...), nil
}

func cmpErr(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

// plain is a schema without combinators.
func (c *conv) plain(s *object, path string) ([]elem, error) {
	types, err := c.types(s, path)
	if err != nil {
		return nil, err
	}
	if ev, ok := s.get("enum"); ok {
		return c.enum(s, ev, types, "enum", path)
	}
	if cv, ok := s.get("const"); ok {
		return c.enum(s, []any{cv}, types, "const", path)
	}
	var alts [][]elem
	for _, t := range types {
		var seq []elem
		var err error
		switch t {
		case "null":
			seq = c.b.lit("null")
		case "boolean":
			seq = c.b.alt(c.b.lit("true"), c.b.lit("false"))
		case "integer":
			seq, err = c.integer(s, path)
		case "number":
			seq, err = c.number(s, path)
		case "string":
			seq, err = c.str(s, path)
		case "array":
			seq, err = c.array(s, path)
		case "object":
			seq, err = c.obj(s, path)
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
	}
	return c.b.alt(alts...), nil
}

var allTypes = []string{"object", "array", "string", "number", "boolean", "null"}

// types is the list of types to generate: the declared ones (number
// standing for integer too), or, without "type", the types whose keywords
// appear (all types if none), less those "not" excludes.
func (c *conv) types(s *object, path string) ([]string, error) {
	var types []string
	switch t := s.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if ts, ok := x.(string); ok {
				types = append(types, ts)
			}
		}
		if len(types) == 0 {
			return nil, schemaErr("type", path, "empty type list")
		}
	case nil:
		fam := map[string][]string{
			"object": {"properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties", "propertyNames", "dependencies", "dependentRequired", "dependentSchemas"},
			"array":  {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"},
			"string": {"pattern", "minLength", "maxLength", "format"},
			"number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
		}
		for _, t := range allTypes {
			for _, k := range fam[t] {
				if _, ok := s.get(k); ok {
					types = append(types, t)
					break
				}
			}
		}
		if len(types) == 0 {
			types = slices.Clone(allTypes)
		}
	default:
		return nil, schemaErr("type", path, "must be a string or an array")
	}
	for _, t := range types {
		if !slices.Contains(allTypes, t) && t != "integer" {
			return nil, schemaErr("type", path, "unknown type %q", t)
		}
	}
	if slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
	}
	if n, ok := s.get("not"); ok {
		return c.notTypes(s, n, types, path)
	}
	return types, nil
}

// notTypes applies "not" where it excludes types or keys (the latter in
// obj); other forms are refused.
func (c *conv) notTypes(s *object, n any, types []string, path string) ([]string, error) {
	nv, err := c.deref(n, path)
	if err != nil {
		return nil, err
	}
	no, ok := nv.(*object)
	if !ok {
		return nil, schemaErr("not", path, "must be a schema object")
	}
	if _, err := c.notKeys(no, path); err == nil {
		return types, nil
	}
	if len(no.keys) == 1 {
		if t, ok := no.vals["type"]; ok {
			var ex []string
			switch t := t.(type) {
			case string:
				ex = []string{t}
			case []any:
				for _, x := range t {
					if ts, ok := x.(string); ok {
						ex = append(ex, ts)
					}
				}
			}
			out := slices.DeleteFunc(slices.Clone(types), func(t string) bool {
				return slices.Contains(ex, t) || t == "integer" && slices.Contains(ex, "number")
			})
			if slices.Contains(ex, "integer") && slices.Contains(out, "number") {
				return nil, schemaErr("not", path, "cannot exclude integers from numbers")
			}
			if len(out) == 0 {
				return nil, schemaErr("not", path, "excludes every type")
			}
			return out, nil
		}
	}
	if _, hasEnum := s.get("enum"); hasEnum {
		return types, nil // enum values are checked against not
	}
	if _, hasConst := s.get("const"); hasConst {
		return types, nil
	}
	return nil, schemaErr("not", path, "only not {type}, not {required}, not {anyOf of required} and not over enum values are supported")
}

// notKeys is the keys a "not" of required keys forbids together: leaving
// out the first of each group satisfies it.
func (c *conv) notKeys(no *object, path string) ([]string, error) {
	if r := stringList(no, "required"); len(r) > 0 && len(no.keys) == 1 {
		return r[:1], nil
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if list, ok := no.vals[kw].([]any); ok && len(no.keys) == 1 {
			var out []string
			for _, x := range list {
				xv, err := c.deref(x, path)
				if err != nil {
					return nil, err
				}
				xo, ok := xv.(*object)
				if r := stringList(xo, "required"); !ok || len(r) == 0 || len(xo.keys) != 1 {
					return nil, schemaErr("not", path, "unsupported")
				} else {
					out = append(out, r[0])
				}
			}
			return out, nil
		}
	}
	return nil, schemaErr("not", path, "unsupported")
}

// enum is one of the values that fit the types and the string keywords.
func (c *conv) enum(s *object, ev any, types []string, kw, path string) ([]elem, error) {
	vals, ok := ev.([]any)
	if !ok || len(vals) == 0 {
		return nil, schemaErr(kw, path, "must be a non-empty array")
	}
	var forbidden []string
	if n, ok := s.get("not"); ok {
		nv, _ := c.deref(n, path)
		if no, ok := nv.(*object); ok {
			if cv, ok := no.get("const"); ok {
				forbidden = append(forbidden, canon(cv))
			}
			if list, ok := no.vals["enum"].([]any); ok {
				for _, x := range list {
					forbidden = append(forbidden, canon(x))
				}
			}
		}
	}
	var alts [][]elem
	for _, v := range vals {
		t := jsonType(v)
		okType := slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number")
		if !okType || slices.Contains(forbidden, canon(v)) {
			continue
		}
		if str, isStr := v.(string); isStr && !c.stringFits(s, str) {
			continue
		}
		var sb strings.Builder
		encodeJSON(&sb, v)
		alts = append(alts, c.b.lit(sb.String()))
	}
	if len(alts) == 0 {
		return nil, schemaErr(kw, path, "no value fits the schema's other keywords")
	}
	return c.b.alt(alts...), nil
}

// stringFits checks a string against pattern and length keywords.
func (c *conv) stringFits(s *object, str string) bool {
	n := utf8.RuneCountInString(str)
	if lo, ok := intKw(s, "minLength"); ok && n < lo {
		return false
	}
	if hi, ok := intKw(s, "maxLength"); ok && n > hi {
		return false
	}
	if p, ok := s.vals["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err != nil || !re.MatchString(str) {
			return false
		}
	}
	return true
}

// intKw reads a non-negative integer keyword.
func intKw(s *object, k string) (int, bool) {
	n, ok := s.vals[k].(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f < 0 {
		return 0, false
	}
	if f > 1<<30 {
		f = 1 << 30
	}
	return int(f), true
}
