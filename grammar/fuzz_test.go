package grammar

import (
	"testing"
)

// smallVocab is a toy vocabulary for fuzzing: every byte (as byte-level
// vocabularies have), some JSON pieces and an end token.
func smallVocab() *Vocab {
	var toks [][]byte
	for c := 0; c < 0x100; c++ {
		toks = append(toks, []byte{byte(c)})
	}
	for _, s := range []string{`{"`, `":`, `",`, `"}`, `true`, `null`, `12`, `[`, `]`, `\n`, "\xc3\xa9", "\xe2\x82"} {
		toks = append(toks, []byte(s))
	}
	toks = append(toks, nil)
	special := make([]bool, len(toks))
	special[len(toks)-1] = true
	return NewVocab(toks, special, []int{len(toks) - 1})
}

var fuzzVocab = smallVocab()

// FuzzSchema compiles arbitrary schemas and walks each grammar a few
// steps: no panic, and every allowed token is accepted.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}`,
		`{"anyOf":[{"type":"integer","minimum":-5,"maximum":300},{"enum":["x",1,null]}]}`,
		`{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"$ref":"#/$defs/n"}`,
		`{"type":"string","pattern":"^[a-c]{2,4}(x|y)?$"}`,
		`{"oneOf":[{"type":"object","properties":{"k":{"const":1}},"required":["k"]},{"type":"number","exclusiveMaximum":0.5}]}`,
		`{"allOf":[{"properties":{"a":{"type":"boolean"}}},{"required":["a"]}],"not":{"required":["b"]}}`,
		`{"type":"object","patternProperties":{"^x":{"type":"integer"}},"maxProperties":2}`,
		`{"if":{"required":["a"]},"then":{"required":["b"]},"properties":{"a":{},"b":{"format":"date"}}}`,
		`true`, `false`, `[]`, `{"type":7}`,
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		g, err := FromJSONSchema(schema)
		if err != nil {
			return
		}
		walk(t, g, seed)
	})
}

// FuzzRegex compiles arbitrary regular expressions the same way.
func FuzzRegex(f *testing.F) {
	for _, s := range []string{`[0-9]{3}-[a-z]+`, `(a|b)*c?`, `^\d+(\.\d+)?$`, `.{2,5}`, `[^"\\]é`} {
		f.Add(s, uint64(2))
	}
	f.Fuzz(func(t *testing.T, re string, seed uint64) {
		g, err := FromRegex(re)
		if err != nil {
			return
		}
		walk(t, g, seed)
	})
}

// walk takes up to 32 steps of mask-and-accept, choosing tokens by seed.
func walk(t *testing.T, g *Grammar, seed uint64) {
	v := fuzzVocab
	m := NewMatcher(g, v)
	bits := make([]uint64, (v.Size()+63)/64)
	for range 32 {
		m.FillMask(bits)
		var ids []int
		for id := range v.Size() {
			if bits[id>>6]>>(id&63)&1 != 0 {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			if !m.Done() {
				t.Fatalf("no token allowed and not done")
			}
			return
		}
		seed = seed*6364136223846793005 + 1442695040888963407
		id := ids[int(seed>>33)%len(ids)]
		if err := m.Accept(id); err != nil {
			t.Fatalf("allowed token %d refused: %v", id, err)
		}
	}
}
