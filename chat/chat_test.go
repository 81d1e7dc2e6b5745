package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

func parseFile(t testing.TB, name string) *Template {
	t.Helper()
	src, err := os.ReadFile(testdata.Path(t, "chat-templates", name))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// openAIRequest is the body a client sends: null content beside tool
// calls, arguments as a JSON string.
const openAIRequest = `{
 "messages": [
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [
   {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 3}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 18}"},
  {"role": "assistant", "content": "18 °C.", "reasoning_content": "Read the tool result."},
  {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
 ],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
 "chat_template_kwargs": {"enable_thinking": false}
}`

// TestOpenAIRequest decodes a request straight into the API types and
// renders it with Qwen3's template. The expected text is Python jinja2's
// render of the same conversation with the arguments as a mapping, null
// content as "" and the last content as a plain string.
func TestOpenAIRequest(t *testing.T) {
	var req struct {
		Messages []Message         `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Kwargs   map[string]any    `json:"chat_template_kwargs"`
	}
	if err := json.Unmarshal([]byte(openAIRequest), &req); err != nil {
		t.Fatal(err)
	}
	if req.Messages[2].Content != nil || req.Messages[2].ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("decoded %+v", req.Messages[2])
	}
	parts, ok := req.Messages[5].Content.([]ContentPart)
	if !ok || parts[0].Text != "Thanks" {
		t.Fatalf("content parts decoded as %#v", req.Messages[5].Content)
	}
	// Qwen3's template only takes string content.
	req.Messages[5].Content = "Thanks"
	got, err := parseFile(t, "Qwen-Qwen3-0.6B.jinja").Render(RenderOptions{
		Messages:            req.Messages,
		Tools:               req.Tools,
		AddGenerationPrompt: true,
		EOSToken:            "<|im_end|>",
		Kwargs:              req.Kwargs,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp_c\": 18}\n</tool_response><|im_end|>\n<|im_start|>assistant\n18 \u00b0C.<|im_end|>\n<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	if got != want {
		t.Fatalf("mismatch\n%s", diff(want, got))
	}
}

func TestContentParts(t *testing.T) {
	tmpl, err := Parse(`{% for m in messages %}{% for p in m.content %}[{{ p.type }}:{{ p.text }}{{ p.image_url.url if p.image_url }}]{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	if err := json.Unmarshal([]byte(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]`), &msgs); err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(RenderOptions{Messages: msgs})
	if err != nil || got != "[text:a][image_url:http://x/y.png]" {
		t.Fatalf("got %q, %v", got, err)
	}
	if err := json.Unmarshal([]byte(`[{"role":"user","content":5}]`), &msgs); err == nil {
		t.Fatal("numeric content decoded without error")
	}
}

func TestRaiseException(t *testing.T) {
	tmpl := parseFile(t, "google-gemma-2-2b-it.jinja")
	_, err := tmpl.Render(RenderOptions{Messages: []Message{{Role: "system", Content: "x"}}})
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "System role not supported" {
		t.Fatalf("got %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"{{ x | nosuchfilter }}",
		"{% if x is nosuchtest %}{% endif %}",
		"{{ 'unclosed }}",
		"{{ a + }}",
		"{% for x in %}{% endfor %}",
		"{% if x %}",
		"{{ f(*args) }}",
	} {
		if _, err := Parse(src); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}

func TestRenderOptionErrors(t *testing.T) {
	tmpl, err := Parse("{{ messages | length }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(RenderOptions{Kwargs: map[string]any{"messages": 1}}); err == nil {
		t.Error("reserved kwarg accepted")
	}
	if _, err := tmpl.Render(RenderOptions{MessagesJSON: json.RawMessage(`{"role":"user"}`)}); err == nil {
		t.Error("non-array MessagesJSON accepted")
	}
	if _, err := tmpl.Render(RenderOptions{Tools: []json.RawMessage{json.RawMessage(`{`)}}); err == nil {
		t.Error("bad tool JSON accepted")
	}
	got, err := tmpl.Render(RenderOptions{MessagesJSON: json.RawMessage(`[{"role":"user","content":"x"}]`)})
	if err != nil || got != "1" {
		t.Errorf("got %q, %v", got, err)
	}
}

// TestMacroRecursion checks that runaway recursion is an error, not a
// Go stack overflow (which would kill the server).
func TestMacroRecursion(t *testing.T) {
	tmpl, err := Parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(RenderOptions{}); err == nil || !strings.Contains(err.Error(), "RecursionError") {
		t.Fatalf("got %v", err)
	}
	// A namespace holding itself must not loop when printed or dumped.
	tmpl, err = Parse("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}{{ ns | tojson }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(RenderOptions{}); err == nil {
		t.Fatal("self-containing namespace dumped as JSON")
	}
}

// TestConcurrentRender renders one template from many goroutines: all
// per-render state (macro depth, scopes) must stay per render.
func TestConcurrentRender(t *testing.T) {
	dir, g := loadGolden(t)
	_ = dir
	tmpl := parseFile(t, "Qwen3-Coder.jinja")
	conv := g.Conversations["tool_call_roundtrip"]
	want := g.Templates["Qwen3-Coder.jinja"].Renders["tool_call_roundtrip"]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got, err := tmpl.Render(g.options(t, conv, true))
				if err != nil || got != want {
					t.Errorf("concurrent render differs: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestFromTokenizerConfig(t *testing.T) {
	raw, err := os.ReadFile(testdata.Path(t, "tokenizers", "qwen3", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := FromTokenizerConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SpecialTokens["eos_token"] != "<|im_end|>" {
		t.Errorf("special tokens %v", tmpl.SpecialTokens)
	}
	if _, ok := tmpl.SpecialTokens["bos_token"]; ok {
		t.Errorf("null bos_token read as %q", tmpl.SpecialTokens["bos_token"])
	}
	_, g := loadGolden(t)
	got, err := tmpl.Render(g.options(t, g.Conversations["multi_turn"], true))
	if want := g.Templates["Qwen-Qwen3-0.6B.jinja"].Renders["multi_turn"]; err != nil || got != want {
		t.Fatalf("config template renders differently from Qwen-Qwen3-0.6B.jinja: %v\n%s", err, diff(want, got))
	}

	named := []byte(`{"chat_template": [
		{"name": "default", "template": "D{{ tools is defined }}"},
		{"name": "tool_use", "template": "T{{ tools | length }}"},
		{"name": "rag", "template": "R"}],
		"eos_token": {"content": "</s>", "lstrip": false}}`)
	tmpl, err = FromTokenizerConfig(named)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tmpl.Render(RenderOptions{}); got != "DFalse" {
		t.Errorf("without tools got %q", got)
	}
	if got, _ := tmpl.Render(RenderOptions{Tools: []json.RawMessage{json.RawMessage(`{}`)}}); got != "T1" {
		t.Errorf("with tools got %q", got)
	}
	if tmpl.SpecialTokens["eos_token"] != "</s>" {
		t.Errorf("AddedToken eos read as %q", tmpl.SpecialTokens["eos_token"])
	}

	toolOnly, err := FromTokenizerConfig([]byte(`{"chat_template": [{"name": "tool_use", "template": "T"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolOnly.Render(RenderOptions{}); err == nil {
		t.Error("rendered without a default template")
	}
	for _, bad := range []string{`{}`, `{"chat_template": null}`, `{"chat_template": 3}`, `{"chat_template": [{"name": "x", "template": "y"}]}`, `{"chat_template": "{{"}`, `[`} {
		if _, err := FromTokenizerConfig([]byte(bad)); err == nil {
			t.Errorf("%s loaded", bad)
		}
	}
}

func TestFromHFDir(t *testing.T) {
	write := func(dir, name, s string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	render := func(tmpl *Template, tools bool) string {
		t.Helper()
		opt := RenderOptions{BOSToken: tmpl.SpecialTokens["bos_token"]}
		if tools {
			opt.Tools = []json.RawMessage{json.RawMessage(`{}`)}
		}
		got, err := tmpl.Render(opt)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// chat_template.jinja wins over the config's template.
	dir := t.TempDir()
	write(dir, "tokenizer_config.json", `{"chat_template": "config", "bos_token": "<s>"}`)
	write(dir, "chat_template.jinja", "{{ bos_token }}file")
	write(dir, "additional_chat_templates/tool_use.jinja", "tools")
	tmpl, err := FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(tmpl, false); got != "<s>file" {
		t.Errorf("got %q", got)
	}
	if got := render(tmpl, true); got != "tools" {
		t.Errorf("with tools got %q", got)
	}

	// chat_template.json next, then the config.
	dir = t.TempDir()
	write(dir, "chat_template.json", `{"chat_template": "json"}`)
	write(dir, "tokenizer_config.json", `{"chat_template": "config"}`)
	if tmpl, err = FromHFDir(dir); err != nil || render(tmpl, false) != "json" {
		t.Errorf("chat_template.json: %v", err)
	}
	dir = t.TempDir()
	write(dir, "tokenizer_config.json", `{"chat_template": "config"}`)
	if tmpl, err = FromHFDir(dir); err != nil || render(tmpl, false) != "config" {
		t.Errorf("tokenizer_config.json: %v", err)
	}

	// A real model folder whose special tokens are AddedToken objects.
	tmpl, err = FromHFDir(testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "bf16"))
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SpecialTokens["bos_token"] == "" || tmpl.SpecialTokens["eos_token"] == "" {
		t.Errorf("special tokens %v", tmpl.SpecialTokens)
	}
	// One without a chat template.
	if _, err := FromHFDir(testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")); err == nil {
		t.Error("loaded a template from a folder that has none")
	}
	if _, err := FromHFDir(t.TempDir()); err == nil {
		t.Error("loaded a template from an empty folder")
	}
}

func TestStrftime(t *testing.T) {
	got := strftime(goldenNow(), "%Y-%m-%d %H:%M:%S %b %B %a %A %-d %e %j %I %p %y %% %Z%z")
	if want := "2026-01-01 12:00:00 Jan January Thu Thursday 1  1 001 12 PM 26 % "; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestPyFloat(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1.0", 0.1: "0.1", 1e16: "1e+16", 1e15: "1000000000000000.0", 1e-4: "0.0001",
		1e-5: "1e-05", 123.456: "123.456", -2.5e-7: "-2.5e-07", 1.5e300: "1.5e+300",
	} {
		if got := pyFloat(f, false); got != want {
			t.Errorf("pyFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

// continue_final_message leaves the last message open: the render with
// add_generation_prompt false up to where that message's text ends, a
// trailing space included (the Qwen3 template strips leading newlines: the
// trimmed text is found then); a final message without text is refused.
func TestContinueFinalMessage(t *testing.T) {
	for _, name := range []string{"Qwen-Qwen3-0.6B.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja"} {
		tmpl := parseFile(t, name)
		for _, content := range []string{"Sure, the answer is ", "Sure, the answer is", "\n\nSure, the answer is"} {
			msgs := []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: content}}
			closed, err := tmpl.Render(RenderOptions{Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			open, err := tmpl.Render(RenderOptions{Messages: msgs, ContinueFinalMessage: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !strings.HasSuffix(open, strings.TrimLeft(content, "\n")) || !strings.HasPrefix(closed, open) || len(closed) <= len(open) {
				t.Errorf("%s: open %q\nclosed %q", name, open, closed)
			}
			if strings.Count(open, "<|im_start|>assistant") != 1 {
				t.Errorf("%s: %q opens another turn", name, open)
			}
		}
		msgs := []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: " "}}
		if _, err := tmpl.Render(RenderOptions{Messages: msgs, ContinueFinalMessage: true}); err == nil || !strings.Contains(err.Error(), "no text") {
			t.Errorf("%s: empty final message: %v", name, err)
		}
	}
}
