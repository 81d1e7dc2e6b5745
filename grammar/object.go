package grammar

import (
	"fmt"
	"slices"
	"strings"
)

// array is a JSON array with its item keywords.
func (c *conv) array(s *object, path string) ([]elem, error) {
	b := c.b
	var prefix []any
	var rest any = true
	hasRest := true
	if p, ok := s.vals["prefixItems"].([]any); ok {
		prefix = p
		if it, ok := s.get("items"); ok {
			rest = it
		}
	} else if it, ok := s.get("items"); ok {
		if list, isList := it.([]any); isList {
			prefix = list
			if ai, ok := s.get("additionalItems"); ok {
				rest = ai
			}
		} else {
			rest = it
		}
	}
	if f, ok := rest.(bool); ok && !f {
		hasRest = false
	}
	lo, _ := intKw(s, "minItems")
	hi, hasHi := intKw(s, "maxItems")
	if !hasHi {
		hi = -1
	}
	if u, _ := s.vals["uniqueItems"].(bool); u {
		// Arrays of at most one item are always unique.
		if lo > 1 {
			return nil, schemaErr("uniqueItems", path, "uniqueItems with minItems %d is not supported", lo)
		}
		hi = 1
	}
	if !hasRest {
		if hi < 0 || hi > len(prefix) {
			hi = len(prefix)
		}
	}
	if hi >= 0 && hi < lo {
		return nil, schemaErr("minItems", path, "minItems %d > maxItems %d (or items allow)", lo, hi)
	}
	if lo > 1000 {
		return nil, schemaErr("minItems", path, "minItems %d is too many", lo)
	}
	if hi > lo+maxArrayLen {
		hi = lo + maxArrayLen
	}
	var items [][]elem
	for i := range prefix {
		if hi >= 0 && i >= hi {
			break
		}
		seq, err := c.schema(prefix[i], fmt.Sprintf("%s/items/%d", path, i))
		if err != nil {
			if i >= lo { // optional items may be left out
				hi = i
				break
			}
			return nil, err
		}
		items = append(items, seq)
	}
	var restSeq []elem
	if hasRest && (hi < 0 || hi > len(items)) && len(items) == len(prefix) {
		seq, err := c.schema(rest, path+"/items")
		if err != nil {
			if len(items) < lo {
				return nil, err
			}
			hi = len(items)
		} else {
			restSeq = seq
		}
	}
	if restSeq == nil && (hi < 0 || hi > len(items)) {
		hi = len(items)
	}
	if hi >= 0 && hi < lo {
		return nil, schemaErr("minItems", path, "cannot make %d items", lo)
	}
	// tail(i): items from index i on, each after a comma.
	comma := b.lit(",")
	var tail []elem
	if restSeq != nil {
		n := len(items)
		rlo, rhi := max(lo-n, 0), -1
		if hi >= 0 {
			rhi = hi - n
		}
		tail = b.repeat(cat(comma, restSeq), max(rlo-1, 0), max(rhi-1, -1))
		if rhi >= 0 && rhi-1 < 0 {
			tail = nil
		}
		first := cat(restSeq, tail)
		if n == 0 {
			body := first
			if rlo == 0 {
				body = b.opt(first)
			}
			if rhi == 0 {
				body = nil
			}
			return cat(b.lit("["), body, b.lit("]")), nil
		}
		tail = cat(comma, restSeq, tail)
		if rlo == 0 {
			tail = b.opt(tail)
		}
		if rhi == 0 {
			tail = nil
		}
	}
	for i := len(items) - 1; i >= 0; i-- {
		x := cat(items[i], tail)
		if i > 0 {
			x = cat(comma, x)
		}
		if i >= lo {
			tail = b.opt(x)
		} else {
			tail = x
		}
	}
	return cat(b.lit("["), tail, b.lit("]")), nil
}

// prop is a property to write.
type prop struct {
	name     string
	schema   any
	required bool
}

// obj is a JSON object: the listed properties in order (required ones
// always, optional ones may be left out), or, for a schema without
// properties, a map of keys to values.
func (c *conv) obj(s *object, path string) ([]elem, error) {
	props, err := c.props(s, path)
	if err != nil {
		return nil, err
	}
	if props == nil {
		return c.mapObject(s, path)
	}
	b := c.b
	// after(i): the properties from i on, when something came before.
	// first(i): the same when nothing came before.
	type pair struct{ after, first []elem }
	next := pair{nil, nil}
	for i := len(props) - 1; i >= 0; i-- {
		p := props[i]
		var k strings.Builder
		encodeString(&k, p.name)
		val, err := c.schema(p.schema, path+"/properties/"+p.name)
		if err != nil {
			if p.required {
				return nil, err
			}
			continue // an optional property that cannot be written is left out
		}
		kv := cat(b.lit(k.String()+":"), val)
		after := cat(b.lit(","), kv, next.after)
		first := cat(kv, next.after)
		if !p.required {
			after = b.alt(after, next.after)
			first = b.alt(first, next.first)
		}
		next = pair{after, first}
	}
	return cat(b.lit("{"), next.first, b.lit("}")), nil
}

// props is the properties an object schema writes, after required,
// not, dependencies, propertyNames, patternProperties and the property
// counts; nil means the schema lists none (a map).
func (c *conv) props(s *object, path string) ([]prop, error) {
	listed, _ := s.vals["properties"].(*object)
	required := stringList(s, "required")
	var props []prop
	if listed != nil {
		for _, k := range listed.keys {
			props = append(props, prop{k, listed.vals[k], slices.Contains(required, k)})
		}
	}
	for _, r := range required {
		if _, ok := listed.get(r); !ok && !slices.ContainsFunc(props, func(p prop) bool { return p.name == r }) {
			var sch any = true
			if ap, ok := s.get("additionalProperties"); ok {
				sch = ap
			}
			if f, ok := sch.(bool); ok && !f {
				return nil, schemaErr("required", path, "property %q is required but not allowed", r)
			}
			props = append(props, prop{r, sch, true})
		}
	}
	if props == nil {
		return nil, nil
	}
	props, err := c.applyNot(s, props, path)
	if err != nil {
		return nil, err
	}
	props, err = c.applyDeps(s, props, path)
	if err != nil {
		return nil, err
	}
	props, err = c.applyNames(s, props, path)
	if err != nil {
		return nil, err
	}
	return c.applyCounts(s, props, path)
}

func (c *conv) applyNot(s *object, props []prop, path string) ([]prop, error) {
	n, ok := s.get("not")
	if !ok {
		return props, nil
	}
	nv, err := c.deref(n, path)
	if err != nil {
		return nil, err
	}
	no, _ := nv.(*object)
	if no == nil {
		return nil, schemaErr("not", path, "must be a schema object")
	}
	if _, isType := no.get("type"); isType && len(no.keys) == 1 {
		return props, nil // handled by types
	}
	keys, err := c.notKeys(no, path)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		i := slices.IndexFunc(props, func(p prop) bool { return p.name == k })
		if i < 0 {
			continue
		}
		if props[i].required {
			// Required together with a key not forbids: fine only if
			// another key of the same group is left out; keep it simple.
			return nil, schemaErr("not", path, "property %q is both required and forbidden by not", k)
		}
		props = slices.Delete(props, i, i+1)
	}
	return props, nil
}

// applyDeps: a required key's dependencies become required; an optional
// key with dependencies is left out.
func (c *conv) applyDeps(s *object, props []prop, path string) ([]prop, error) {
	for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		deps, ok := s.vals[kw].(*object)
		if !ok {
			continue
		}
		for _, k := range deps.keys {
			i := slices.IndexFunc(props, func(p prop) bool { return p.name == k })
			if i < 0 {
				continue
			}
			if !props[i].required {
				props = slices.Delete(props, i, i+1)
				continue
			}
			switch d := deps.vals[k].(type) {
			case []any:
				for _, x := range d {
					name, _ := x.(string)
					j := slices.IndexFunc(props, func(p prop) bool { return p.name == name })
					if j < 0 {
						return nil, schemaErr(kw, path, "%q needs %q, which is not a listed property", k, name)
					}
					props[j].required = true
				}
			default:
				return nil, schemaErr(kw, path, "a schema dependency of a required property is not supported")
			}
		}
	}
	return props, nil
}

// applyNames checks names against propertyNames and merges the schemas of
// matching patternProperties into each property's.
func (c *conv) applyNames(s *object, props []prop, path string) ([]prop, error) {
	if pn, ok := s.get("propertyNames"); ok {
		kept := props[:0]
		for _, p := range props {
			ok, err := c.nameFits(pn, p.name, path)
			if err != nil {
				return nil, err
			}
			if !ok && p.required {
				return nil, schemaErr("propertyNames", path, "required property %q does not fit propertyNames", p.name)
			}
			if ok {
				kept = append(kept, p)
			}
		}
		props = kept
	}
	pp, ok := s.vals["patternProperties"].(*object)
	if !ok {
		return props, nil
	}
	for i, p := range props {
		for _, pat := range pp.keys {
			re, err := compileECMA(pat)
			if err != nil {
				return nil, schemaErr("patternProperties", path, "%v", err)
			}
			if re.MatchString(p.name) {
				props[i].schema = mustObject(map[string]any{"allOf": []any{p.schema, pp.vals[pat]}})
			}
		}
	}
	return props, nil
}

// applyCounts meets minProperties by requiring the first optional
// properties and maxProperties by leaving out the last ones.
func (c *conv) applyCounts(s *object, props []prop, path string) ([]prop, error) {
	nreq := 0
	for _, p := range props {
		if p.required {
			nreq++
		}
	}
	if lo, ok := intKw(s, "minProperties"); ok && lo > nreq {
		if lo > len(props) {
			return nil, schemaErr("minProperties", path, "minProperties %d needs more properties than the %d listed", lo, len(props))
		}
		for i := range props {
			if nreq < lo && !props[i].required {
				props[i].required = true
				nreq++
			}
		}
	}
	if hi, ok := intKw(s, "maxProperties"); ok {
		if hi < nreq {
			return nil, schemaErr("maxProperties", path, "maxProperties %d < %d required properties", hi, nreq)
		}
		n := 0
		kept := props[:0]
		for _, p := range props {
			if p.required || n < hi-nreq {
				if !p.required {
					n++
				}
				kept = append(kept, p)
			}
		}
		props = kept
	}
	return props, nil
}

// mapObject is an object of keys to values: keys from patternProperties
// or propertyNames, values from their schema or additionalProperties.
func (c *conv) mapObject(s *object, path string) ([]elem, error) {
	b := c.b
	lo, _ := intKw(s, "minProperties")
	hi, hasHi := intKw(s, "maxProperties")
	if !hasHi {
		hi = -1
	}
	if lo > 1 {
		return nil, schemaErr("minProperties", path, "minProperties %d on an object without listed properties is not supported (keys could repeat)", lo)
	}
	if hi > maxArrayLen {
		hi = maxArrayLen
	}
	var val any = true
	if ap, ok := s.get("additionalProperties"); ok {
		val = ap
	}
	key := c.stringOf(0, -1)
	if pp, ok := s.vals["patternProperties"].(*object); ok && len(pp.keys) > 0 {
		// Keys from the first pattern; their values must fit every pattern
		// schema, since a key may match more than one.
		pat := pp.keys[0]
		seq, err := c.patternString(pat, 0, -1, path+"/patternProperties")
		if err != nil {
			return nil, schemaErr("patternProperties", path, "%v", err)
		}
		key = cat(b.lit(`"`), seq, b.lit(`"`))
		all := []any{}
		for _, k := range pp.keys {
			all = append(all, pp.vals[k])
		}
		val = mustObject(map[string]any{"allOf": all})
	} else if pn, ok := s.get("propertyNames"); ok {
		pv, err := c.deref(pn, path)
		if err != nil {
			return nil, err
		}
		po, _ := pv.(*object)
		if po == nil {
			return nil, schemaErr("propertyNames", path, "must be a schema object")
		}
		seq, err := c.schema(withType(po, "string"), path+"/propertyNames")
		if err != nil {
			return nil, err
		}
		key = seq
	} else if _, hasDeps := s.get("dependencies"); hasDeps {
		// Keys are free strings, which could name a dependency.
		return nil, schemaErr("dependencies", path, "dependencies on an object without listed properties are not supported")
	}
	if n, ok := s.get("not"); ok {
		if no, _ := n.(*object); no == nil || len(no.keys) != 1 || no.vals["type"] == nil {
			return nil, schemaErr("not", path, "not on an object without listed properties is not supported")
		}
	}
	if f, ok := val.(bool); (ok && !f) || hi == 0 {
		return b.lit("{}"), nil
	}
	v, err := c.schema(val, path+"/additionalProperties")
	if err != nil {
		if lo == 0 {
			return b.lit("{}"), nil
		}
		return nil, err
	}
	entry := cat(key, b.lit(":"), v)
	var more []elem
	if hi < 0 {
		more = b.star(cat(b.lit(","), entry))
	} else if hi > 1 {
		more = b.repeat(cat(b.lit(","), entry), 0, hi-1)
	}
	body := cat(entry, more)
	if lo == 0 {
		body = b.opt(body)
	}
	return cat(b.lit("{"), body, b.lit("}")), nil
}

func withType(o *object, t string) *object {
	if _, ok := o.get("type"); ok {
		return o
	}
	o = o.clone()
	o.set("type", t)
	return o
}
