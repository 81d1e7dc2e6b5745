package grammar

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
)

// merge is the schema that accepts what both a and b accept, for the
// keywords that combine (allOf, and a branch with its siblings).
func (c *conv) merge(av, bv any, path string) (any, error) {
	av, err := c.deref(av, path)
	if err != nil {
		return nil, err
	}
	bv, err = c.deref(bv, path)
	if err != nil {
		return nil, err
	}
	if x, ok := av.(bool); ok {
		if !x {
			return false, nil
		}
		return bv, nil
	}
	if x, ok := bv.(bool); ok {
		if !x {
			return false, nil
		}
		return av, nil
	}
	a, okA := av.(*object)
	b, okB := bv.(*object)
	if !okA || !okB {
		return nil, schemaErr("allOf", path, "a schema must be an object or a boolean")
	}
	out := a.clone()
	for _, k := range b.keys {
		bx := b.vals[k]
		ax, has := out.vals[k]
		if !has {
			out.set(k, bx)
			continue
		}
		if annotation[k] || reflect.DeepEqual(ax, bx) {
			continue
		}
		v, err := c.mergeKeyword(k, ax, bx, path)
		if err != nil {
			return nil, err
		}
		out.set(k, v)
	}
	if err := closeProps(out, a, b, path); err != nil {
		return nil, err
	}
	return out, nil
}

// closeProps keeps properties that one side's additionalProperties: false
// forbids out of the merge (an error if required).
func closeProps(out, a, b *object, path string) error {
	for _, side := range []*object{a, b} {
		if ap, ok := side.vals["additionalProperties"].(bool); !ok || ap {
			continue
		}
		if _, ok := side.get("patternProperties"); ok {
			continue
		}
		own, _ := side.vals["properties"].(*object)
		props, _ := out.vals["properties"].(*object)
		if props == nil {
			continue
		}
		props = props.clone()
		for _, k := range slices.Clone(props.keys) {
			if _, ok := own.get(k); !ok {
				if slices.Contains(stringList(out, "required"), k) {
					return schemaErr("additionalProperties", path, "property %q is required but another branch forbids it", k)
				}
				props.del(k)
			}
		}
		out.vals["properties"] = props
	}
	return nil
}

func (c *conv) mergeKeyword(k string, ax, bx any, path string) (any, error) {
	allOf := func() any { return mustObject(map[string]any{"allOf": []any{ax, bx}}) }
	switch k {
	case "properties", "patternProperties":
		ao, ok1 := ax.(*object)
		bo, ok2 := bx.(*object)
		if !ok1 || !ok2 {
			break
		}
		m := ao.clone()
		for _, p := range bo.keys {
			if x, ok := m.get(p); ok {
				m.set(p, mustObject(map[string]any{"allOf": []any{x, bo.vals[p]}}))
			} else {
				m.set(p, bo.vals[p])
			}
		}
		return m, nil
	case "required":
		la, ok1 := ax.([]any)
		lb, ok2 := bx.([]any)
		if !ok1 || !ok2 {
			return nil, schemaErr(k, path, "must be an array of strings")
		}
		out := slices.Clone(la)
		for _, x := range lb {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
		return out, nil
	case "type":
		ta, tb := typeList(ax), typeList(bx)
		var out []any
		for _, t := range ta {
			switch {
			case slices.Contains(tb, t):
				out = append(out, t)
			case t == "integer" && slices.Contains(tb, "number"):
				out = append(out, t)
			case t == "number" && slices.Contains(tb, "integer"):
				out = append(out, "integer")
			}
		}
		if len(out) == 0 {
			return nil, schemaErr("type", path, "allOf of disjoint types %v and %v", ta, tb)
		}
		return out, nil
	case "enum", "const":
		la, lb := valueList(k, ax), valueList(k, bx)
		var out []any
		for _, x := range la {
			for _, y := range lb {
				if canon(x) == canon(y) {
					out = append(out, x)
					break
				}
			}
		}
		if len(out) == 0 {
			return nil, schemaErr(k, path, "allOf with no common value")
		}
		if k == "const" && len(out) == 1 {
			return out[0], nil
		}
		return out, nil
	case "minimum", "minLength", "minItems", "minProperties":
		return numMax(ax, bx), nil
	case "maximum", "maxLength", "maxItems", "maxProperties":
		return numMin(ax, bx), nil
	case "exclusiveMinimum":
		if _, ok := ax.(json.Number); ok {
			return numMax(ax, bx), nil
		}
	case "exclusiveMaximum":
		if _, ok := ax.(json.Number); ok {
			return numMin(ax, bx), nil
		}
	case "additionalProperties", "additionalItems", "items", "propertyNames":
		if x, ok := ax.(bool); ok && !x {
			return false, nil
		}
		if x, ok := bx.(bool); ok && !x {
			return false, nil
		}
		if _, ok := ax.([]any); ok {
			break
		}
		if _, ok := bx.([]any); ok {
			break
		}
		return allOf(), nil
	case "uniqueItems":
		return ax == true || bx == true, nil
	case "not":
		return mustObject(map[string]any{"anyOf": []any{ax, bx}}), nil
	case "dependencies", "dependentRequired", "dependentSchemas":
		ao, ok1 := ax.(*object)
		bo, ok2 := bx.(*object)
		if !ok1 || !ok2 {
			break
		}
		m := ao.clone()
		for _, p := range bo.keys {
			if _, ok := m.get(p); ok {
				return nil, schemaErr(k, path, "cannot combine two %s for %q", k, p)
			}
			m.set(p, bo.vals[p])
		}
		return m, nil
	}
	return nil, schemaErr(k, path, "cannot combine two different %q in allOf or with a branch", k)
}

func typeList(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func valueList(k string, v any) []any {
	if k == "const" {
		return []any{v}
	}
	l, _ := v.([]any)
	return l
}

func numF(v any) float64 {
	n, ok := v.(json.Number)
	if !ok {
		return math.NaN()
	}
	f, err := n.Float64()
	if err != nil {
		return math.NaN()
	}
	return f
}

func numMax(a, b any) any {
	if numF(b) > numF(a) {
		return b
	}
	return a
}

func numMin(a, b any) any {
	if numF(b) < numF(a) {
		return b
	}
	return a
}

// exclusive checks that outputs of branch i (already merged with its
// siblings, as sub) fail every other oneOf branch: by type, by values,
// or by object keys.
func (c *conv) exclusive(sub any, list []any, i int, path string) error {
	sv, err := c.deref(sub, path)
	if err != nil {
		return err
	}
	so, ok := sv.(*object)
	if !ok {
		return schemaErr("oneOf", path, "branch is not an object schema")
	}
	mine, err := c.types(so, path)
	if err != nil {
		return err
	}
	for j, other := range list {
		if j == i {
			continue
		}
		ov, err := c.deref(other, path)
		if err != nil {
			return err
		}
		oo, ok := ov.(*object)
		if !ok || !c.excludes(so, mine, oo) {
			return schemaErr("oneOf", path, "outputs of this branch may also match branch %d", j)
		}
	}
	return nil
}

// excludes reports whether every output generated for s (of types mine)
// fails o.
func (c *conv) excludes(s *object, mine []string, o *object) bool {
	if ot, ok := o.vals["type"]; ok {
		theirs := typeList(ot)
		overlap := false
		for _, t := range mine {
			if slices.Contains(theirs, t) || t == "integer" && slices.Contains(theirs, "number") ||
				t == "number" && slices.Contains(theirs, "integer") {
				overlap = true
			}
		}
		if !overlap {
			return true
		}
	}
	if vals, ok := enumValues(o); ok {
		if myVals, ok := enumValues(s); ok && disjoint(myVals, vals) {
			return true
		}
		allOther := true
		for _, v := range vals {
			if slices.Contains(mine, jsonType(v)) || jsonType(v) == "integer" && slices.Contains(mine, "number") {
				allOther = false
			}
		}
		if allOther {
			return true
		}
	}
	if len(mine) != 1 || mine[0] != "object" {
		return false
	}
	myProps, _ := s.vals["properties"].(*object)
	if myProps == nil {
		return false
	}
	if _, ok := s.get("additionalProperties"); ok && s.vals["additionalProperties"] != false {
		if _, hasPP := s.get("patternProperties"); hasPP {
			return false
		}
	}
	// o requires a key s never writes.
	for _, r := range stringList(o, "required") {
		if _, ok := myProps.get(r); !ok {
			return true
		}
	}
	myReq := stringList(s, "required")
	theirProps, _ := o.vals["properties"].(*object)
	if ap, ok := o.vals["additionalProperties"].(bool); ok && !ap {
		if _, hasPP := o.get("patternProperties"); !hasPP {
			for _, r := range myReq {
				if _, ok := theirProps.get(r); !ok {
					return true
				}
			}
		}
	}
	// A required key of s whose values o's schema for it excludes.
	for _, r := range myReq {
		mp, _ := myProps.get(r)
		tp, ok := theirProps.get(r)
		if !ok {
			continue
		}
		mpv, _ := c.deref(mp, "")
		tpv, _ := c.deref(tp, "")
		mo, ok1 := mpv.(*object)
		to, ok2 := tpv.(*object)
		if !ok1 || !ok2 {
			continue
		}
		a, okA := enumValues(mo)
		b, okB := enumValues(to)
		if okA && okB && disjoint(a, b) {
			return true
		}
	}
	return false
}

func enumValues(o *object) ([]any, bool) {
	if v, ok := o.get("const"); ok {
		return []any{v}, true
	}
	if l, ok := o.vals["enum"].([]any); ok {
		return l, true
	}
	return nil, false
}

func disjoint(a, b []any) bool {
	for _, x := range a {
		for _, y := range b {
			if canon(x) == canon(y) {
				return false
			}
		}
	}
	return true
}
