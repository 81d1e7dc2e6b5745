package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/siskin-ml/siskin/chat/toolcall"
)

var weatherTools = []Tool{
	{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string","minLength":1,"maxLength":10},"unit":{"enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":14}},"required":["city","days"]}`)},
	{Name: "search", Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string","maxLength":10},"filters":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3},"strict":{"type":"boolean"}},"required":["query"]}`)},
}

// Random outputs of each format's tool-call grammar parse, with
// siskin's own tool-call parser (an independent piece: it follows vLLM's
// parsers), into calls whose arguments the validator accepts.
func TestToolCallGrammars(t *testing.T) {
	v := loadQwenVocab(t)
	vals := map[string]interface{ Validate(any) error }{}
	var ptools []toolcall.Tool
	for _, tl := range weatherTools {
		vals[tl.Name] = validator(t, tl.Name+".json", tl.Parameters)
		ptools = append(ptools, toolcall.Tool{Name: tl.Name, Parameters: tl.Parameters})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, format := range []string{"hermes", "spark25", "llama3_json", "mistral"} {
		for _, parallel := range []bool{false, true} {
			g, err := ToolCalls(ToolCallSpec{Format: format, Tools: weatherTools, Parallel: parallel})
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			done := 0
			for range 6 {
				out, ok := randomOutput(t, g, v, rng, 150)
				if !ok {
					continue
				}
				done++
				p, err := toolcall.New(format, "", ptools, toolcall.Options{})
				if err != nil {
					t.Fatal(err)
				}
				res := p.Feed(string(out))
				res.Append(p.Finish())
				if len(res.Calls) == 0 || (!parallel && len(res.Calls) != 1) {
					t.Fatalf("%s: %q parsed to %d calls (content %q)", format, out, len(res.Calls), res.Content)
				}
				for _, c := range res.Calls {
					var doc any
					if err := json.Unmarshal([]byte(c.Arguments), &doc); err != nil {
						t.Fatalf("%s: arguments %q: %v", format, c.Arguments, err)
					}
					if err := vals[c.Name].Validate(doc); err != nil {
						t.Errorf("%s: %q: arguments %s fail: %v", format, out, c.Arguments, err)
					}
				}
			}
			if done == 0 {
				t.Errorf("%s: no output finished", format)
			}
		}
	}
}

// Spark's raw string values may hold inner spaces and non-ASCII text when
// unbounded, never whitespace at their ends or '<'; the parser reads them
// back as the same strings.
func TestSparkStringValues(t *testing.T) {
	tools := []Tool{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	g, err := ToolCalls(ToolCallSpec{Format: "spark25", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	call := func(v string) string {
		return "<tool_call>f<arg_key>city</arg_key><arg_value>" + v + "</arg_value></tool_call>"
	}
	for _, v := range []string{"New York", "Zürich", "a b c", "x"} {
		if m := NewMatcher(g, fuzzVocab); !m.AcceptBytes([]byte(call(v))) || !m.CanEnd() {
			t.Errorf("refused %q", v)
			continue
		}
		p, _ := toolcall.New("spark25", "", []toolcall.Tool{{Name: "f", Parameters: tools[0].Parameters}}, toolcall.Options{})
		res := p.Feed(call(v))
		res.Append(p.Finish())
		want, _ := json.Marshal(map[string]string{"city": v})
		if len(res.Calls) != 1 || res.Calls[0].Arguments != string(want) {
			t.Errorf("%q parsed to %+v", v, res.Calls)
		}
	}
	for _, v := range []string{" x", "x ", "a  b", "a<b", "a\nb"} {
		if m := NewMatcher(g, fuzzVocab); m.AcceptBytes([]byte(call(v))) && m.CanEnd() {
			t.Errorf("took %q", v)
		}
	}
}
