package grammar

import "testing"

// JSON grammars are compact: no whitespace between tokens, so a model
// cannot pad an output forever; the hermes tool-call format has only its
// fixed separators.
func TestJSONCompact(t *testing.T) {
	schema, err := FromJSONSchema([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ToolCalls(ToolCallSpec{Format: "hermes", Tools: weatherTools[:1]})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		g    *Grammar
		good string
		bad  []string
	}{
		{"json_object", JSONObject(), `{"a":[1,{"b":null}]}`, []string{`{ "a":1}`, `{"a" :1}`, `{"a": 1}`, `{"a":[1 ,2]}`, "{\n", `{"a":1} `}},
		{"schema", schema, `{"a":[1,2]}`, []string{`{ `, `{"a": [`, `{"a":[1, 2]}`, `{"a":[1]} `}},
		{"hermes", tools, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"x\",\"days\":1}}\n</tool_call>", []string{"<tool_call>\n {", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\":  {", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": { "}},
	} {
		if m := NewMatcher(c.g, fuzzVocab); !m.AcceptBytes([]byte(c.good)) || !m.CanEnd() {
			t.Errorf("%s: refused %q", c.name, c.good)
		}
		for _, s := range c.bad {
			if m := NewMatcher(c.g, fuzzVocab); m.AcceptBytes([]byte(s)) {
				t.Errorf("%s: took whitespace in %q", c.name, s)
			}
		}
	}
}
