package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ardanlabs/jinja"
)

// jsonToValue decodes one JSON value into a template value. It walks the
// token stream itself because jinja.FromGoValue sorts map keys, and
// transformers hands templates Python dicts that keep the source key order
// (tool schemas printed with tojson would otherwise come out reordered).
func jsonToValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), fmt.Errorf("chat: trailing data after JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds nesting of decoded input, keeping every later walk
// over a value (printing, tojson, equality) shallow.
const maxJSONDepth = 500

func decodeValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Undefined(), fmt.Errorf("chat: JSON nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			items := []jinja.Value{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewList(items), nil
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				k, ok := kt.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("chat: object key %v is not a string", kt)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return d, nil
		}
		return jinja.Undefined(), fmt.Errorf("chat: unexpected delimiter %v", t)
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		return numberValue(t), nil
	}
	return jinja.Undefined(), fmt.Errorf("chat: unexpected JSON token %v", tok)
}

// numberValue keeps Python's int/float split: json.loads gives int for
// "3" and float for "3.0", and tojson prints them differently.
func numberValue(n json.Number) jinja.Value {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := n.Int64(); err == nil {
			return jinja.NewInt(i)
		}
	}
	f, err := n.Float64()
	if err != nil {
		return jinja.NewString(s)
	}
	return jinja.NewFloat(f)
}
