package grammar

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Tool is a function a tool-call grammar may call: its name and the JSON
// Schema of its arguments (nil: any object).
type Tool struct {
	Name       string
	Parameters []byte
}

// ToolCallSpec asks for a grammar of tool calls in a model's format.
type ToolCallSpec struct {
	Format   string // spark25, hermes, llama3_json or mistral
	Tools    []Tool // the tools that may be called
	Parallel bool   // more than one call allowed
}

// ToolCalls compiles the grammar of an output made only of tool calls in
// spec's format, each call's arguments matching its tool's schema. The
// first call's opening may already be in the prompt (a forced prefix):
// the caller feeds it to the Matcher with AcceptBytes.
func ToolCalls(spec ToolCallSpec) (*Grammar, error) {
	if len(spec.Tools) == 0 {
		return nil, fmt.Errorf("tool calls: no tools")
	}
	src, _ := json.Marshal(spec)
	return cachedCompile("tools", src, func() (*Grammar, error) {
		c := newConv(true)
		b := c.b
		var calls [][]elem
		for _, t := range spec.Tools {
			call, err := toolCall(c, spec.Format, t)
			if err != nil {
				return nil, err
			}
			calls = append(calls, call)
		}
		call := b.alt(calls...)
		var sep, open, close []elem
		switch spec.Format {
		case "hermes":
			sep = b.lit("\n")
		case "llama3_json":
			sep = b.lit("; ")
		case "mistral":
			open, sep, close = b.lit("[TOOL_CALLS]["), b.lit(", "), b.lit("]")
		}
		body := call
		if spec.Parallel {
			body = cat(call, b.repeat(cat(sep, call), 0, 7))
		}
		return b.finish(cat(open, body, close))
	})
}

// toolCall is one call of t in format.
func toolCall(base *conv, format string, t Tool) ([]elem, error) {
	b := base.b
	var params any = true
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		v, err := decodeJSON(t.Parameters)
		if err != nil {
			return nil, schemaErr("", "#", "tool %q: parameters are not JSON: %v", t.Name, err)
		}
		params = v
	}
	c := schemaConv(b, params)
	c.anyVal, c.chars = base.anyVal, base.chars
	name := func() string { var sb strings.Builder; encodeString(&sb, t.Name); return sb.String() }
	if format == "spark25" {
		args, err := c.sparkArgs(params)
		if err != nil {
			return nil, err
		}
		return cat(b.lit("<tool_call>"+t.Name), args, b.lit("</tool_call>")), nil
	}
	args, err := c.schema(objectOnly(params), "#")
	if err != nil {
		return nil, err
	}
	switch format {
	case "hermes":
		return cat(b.lit("<tool_call>\n{\"name\": "+name()+", \"arguments\": "), args, b.lit("}\n</tool_call>")), nil
	case "llama3_json":
		return cat(b.lit("{\"name\": "+name()+", \"parameters\": "), args, b.lit("}")), nil
	case "mistral":
		return cat(b.lit("{\"name\": "+name()+", \"arguments\": "), args, b.lit("}")), nil
	}
	return nil, fmt.Errorf("tool calls: no grammar for the tool format %q", format)
}

// objectOnly makes arguments an object whatever the schema's type says.
func objectOnly(params any) any {
	o, ok := params.(*object)
	if !ok {
		return mustObject(map[string]any{"type": "object"})
	}
	if _, ok := o.get("type"); !ok {
		o = o.clone()
		o.set("type", "object")
	}
	return o
}

// sparkArgs is Spark-X2.5's argument list: <arg_key>K</arg_key><arg_value>V</arg_value>
// per property, V raw text for string parameters and JSON otherwise (the
// parser types values by the declared schema).
func (c *conv) sparkArgs(params any) ([]elem, error) {
	b := c.b
	po, _ := params.(*object)
	if po == nil {
		return c.sparkFreeArgs(), nil
	}
	props, err := c.props(po, "#")
	if err != nil {
		return nil, err
	}
	if len(props) == 0 {
		if ap, ok := po.get("additionalProperties"); !ok || ap != false {
			return c.sparkFreeArgs(), nil
		}
	}
	var tail []elem
	for i := len(props) - 1; i >= 0; i-- {
		p := props[i]
		v, err := c.sparkValue(p.schema, "#/properties/"+p.name)
		if err != nil {
			if p.required {
				return nil, err
			}
			continue
		}
		kv := cat(b.lit("<arg_key>"+p.name+"</arg_key><arg_value>"), v, b.lit("</arg_value>"), tail)
		if p.required {
			tail = kv
		} else {
			tail = b.alt(kv, tail)
		}
	}
	return tail, nil
}

// sparkFreeArgs is up to 8 arguments of any name and text value, for a
// tool whose schema lists no properties but allows others.
func (c *conv) sparkFreeArgs() []elem {
	b := c.b
	var name byteSet
	name.addRange('a', 'z')
	name.addRange('A', 'Z')
	name.addRange('0', '9')
	name.add('_')
	kv := cat(b.lit("<arg_key>"), b.repeat([]elem{b.class(name)}, 1, 32), b.lit("</arg_key><arg_value>"), c.sparkText(0, maxStringLen), b.lit("</arg_value>"))
	return b.repeat(kv, 0, 8)
}

// sparkValue is a parameter's value text: raw for a string parameter.
func (c *conv) sparkValue(sch any, path string) ([]elem, error) {
	sv, err := c.deref(sch, path)
	if err != nil {
		return nil, err
	}
	so, ok := sv.(*object)
	if !ok || !contains(typeList(so.vals["type"]), "string") {
		return c.schema(sch, path)
	}
	b := c.b
	if vals, ok := enumValues(so); ok {
		var alts [][]elem
		for _, v := range vals {
			if s, ok := v.(string); ok && !strings.Contains(s, "<") && c.stringFits(so, s) {
				alts = append(alts, b.lit(s))
			}
		}
		if len(alts) == 0 {
			return nil, schemaErr("enum", path, "no string value fits")
		}
		return b.alt(alts...), nil
	}
	if _, ok := so.get("pattern"); ok {
		return nil, schemaErr("pattern", path, "pattern on a Spark string parameter is not supported")
	}
	if f, ok := so.vals["format"].(string); ok && formats[f] != "" {
		return b.regex(formats[f], false)
	}
	lo, _ := intKw(so, "minLength")
	hi, hasHi := intKw(so, "maxLength")
	if !hasHi {
		hi = -1
	} else if hi > lo+maxStringLen {
		hi = max(lo, maxStringLen)
	}
	return c.sparkText(lo, hi), nil
}

// sparkText is lo to hi (< 0: any number of) characters of raw value
// text: printable ASCII without '<' (which could close the value) and
// without whitespace at its ends (the parser trims it). Text of any
// length may also hold single inner spaces and non-ASCII characters
// ("New York", "Zürich"); counted text is ASCII without spaces.
func (c *conv) sparkText(lo, hi int) []elem {
	b := c.b
	var ascii byteSet
	ascii.addRange(0x21, 0x7e)
	ascii[0] &^= 1 << '<'
	if lo > 0 || hi >= 0 {
		return b.repeat([]elem{b.class(ascii)}, lo, hi)
	}
	alts := [][]elem{{b.class(ascii)}}
	utf8Ranges(0x80, 0x10ffff, func(seq [][2]byte) {
		var out []elem
		for _, r := range seq {
			out = append(out, b.set(r[0], r[1])...)
		}
		alts = append(alts, out)
	})
	char := b.alt(alts...)
	var more [][]elem
	for _, a := range b.spread(char) {
		more = append(more, a, cat(b.lit(" "), a))
	}
	return b.opt(cat(char, b.star(b.alt(more...))))
}
