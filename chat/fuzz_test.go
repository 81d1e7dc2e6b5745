package chat

import (
	"encoding/json"
	"testing"
)

// FuzzRender renders Qwen3's template with arbitrary message JSON, both
// as raw JSON and decoded into []Message. Errors are fine; panics and
// hangs are not.
func FuzzRender(f *testing.F) {
	tmpl := parseFile(f, "Qwen-Qwen3-0.6B.jinja")
	tools := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}`)}
	f.Add([]byte(`[{"role":"user","content":"hi"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, withTools := range []bool{false, true} {
			opt := RenderOptions{MessagesJSON: data, AddGenerationPrompt: true, EOSToken: "<|im_end|>", Now: goldenNow}
			if withTools {
				opt.Tools = tools
			}
			_, _ = tmpl.Render(opt)
			var msgs []Message
			if json.Unmarshal(data, &msgs) == nil {
				opt.MessagesJSON, opt.Messages = nil, msgs
				_, _ = tmpl.Render(opt)
			}
		}
	})
}

// FuzzParse compiles arbitrary template text and renders what compiles.
func FuzzParse(f *testing.F) {
	f.Add("{% for m in messages %}{{ m.role | upper ~ ': ' + m.content[1:] }}{% endfor %}")
	f.Add("{% macro f(a, b='x') %}{{ a * 2 }}{% endmacro %}{{ f(3) is string }}")
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(RenderOptions{
			MessagesJSON: json.RawMessage(`[{"role":"user","content":"hi","x":[1,{"y":null}]}]`),
			Kwargs:       map[string]any{"n": 3, "s": "abc"},
			Now:          goldenNow,
		})
	})
}
