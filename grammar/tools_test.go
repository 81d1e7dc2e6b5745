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
