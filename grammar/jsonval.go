package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// object is a decoded JSON object that keeps its keys' order (property
// order is the order a constrained output lists them in).
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; ok {
		delete(o.vals, k)
		o.keys = slices.DeleteFunc(slices.Clone(o.keys), func(s string) bool { return s == k })
	}
}

func (o *object) clone() *object {
	c := &object{keys: slices.Clone(o.keys), vals: make(map[string]any, len(o.vals))}
	for k, v := range o.vals {
		c.vals[k] = v
	}
	return c
}

func newObject() *object { return &object{vals: map[string]any{}} }

// maxDepth bounds the nesting of a decoded document.
const maxDepth = 512

// decodeJSON decodes one JSON document: objects as *object, arrays as
// []any, numbers as json.Number.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := newObject()
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			o.set(k, v)
		}
		_, err := d.Token()
		return o, err
	case json.Delim('['):
		arr := []any{}
		for d.More() {
			v, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := d.Token()
		return arr, err
	case json.Delim('}'), json.Delim(']'):
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return t, nil
}

// encodeJSON writes v compactly; object keys in their order.
func encodeJSON(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case *object:
		sb.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				sb.WriteByte(',')
			}
			encodeString(sb, k)
			sb.WriteByte(':')
			encodeJSON(sb, x.vals[k])
		}
		sb.WriteByte('}')
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			encodeJSON(sb, e)
		}
		sb.WriteByte(']')
	case string:
		encodeString(sb, x)
	case json.Number:
		sb.WriteString(string(x))
	case bool:
		if x {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	default:
		sb.WriteString("null")
	}
}

func encodeString(sb *strings.Builder, s string) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)
	sb.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// canon is a key for JSON equality: objects with sorted keys, numbers by
// value.
func canon(v any) string {
	var sb strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case *object:
			keys := slices.Clone(x.keys)
			sort.Strings(keys)
			sb.WriteByte('{')
			for _, k := range keys {
				encodeString(&sb, k)
				sb.WriteByte(':')
				walk(x.vals[k])
			}
			sb.WriteByte('}')
		case []any:
			sb.WriteByte('[')
			for _, e := range x {
				walk(e)
				sb.WriteByte(',')
			}
			sb.WriteByte(']')
		case json.Number:
			if f, err := x.Float64(); err == nil {
				fmt.Fprintf(&sb, "%v", f)
			} else {
				sb.WriteString(string(x))
			}
		default:
			encodeJSON(&sb, v)
		}
	}
	walk(v)
	return sb.String()
}

// jsonType is the JSON Schema type name of v ("integer" for integral
// numbers).
func jsonType(v any) string {
	switch x := v.(type) {
	case *object:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if f, err := x.Float64(); err == nil && f == float64(int64(f)) {
			return "integer"
		}
		return "number"
	}
	return "null"
}
