package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/testdata"
)

// renderedAll is chat-templates/golden/rendered_all.json: Python jinja2
// 3.1.2 renders (the transformers recipe, add_generation_prompt=True) of
// each conversation, or the error jinja2 raised.
type renderedAll struct {
	SpecialTokens map[string]string `json:"special_tokens"`
	Conversations map[string]struct {
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
		Kwargs   json.RawMessage `json:"kwargs"`
	} `json:"conversations"`
	Templates map[string]struct {
		Renders map[string]string `json:"renders"`
		Errors  map[string]string `json:"errors"`
	} `json:"templates"`
}

// checkTemplateCLI renders every golden conversation of template name with
// siskin template -m model and compares with jinja2.
func checkTemplateCLI(t *testing.T, g *renderedAll, name, model string) {
	t.Helper()
	tmpl := g.Templates[name]
	if len(tmpl.Renders) == 0 {
		t.Fatalf("%s: no golden renders", name)
	}
	dir := t.TempDir()
	for conv, c := range g.Conversations {
		args := []string{"template", "-m", model, "--messages", filepath.Join(dir, conv+".json")}
		if err := os.WriteFile(args[4], c.Messages, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(c.Tools) > 0 {
			tools := filepath.Join(dir, conv+".tools.json")
			if err := os.WriteFile(tools, c.Tools, 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--tools", tools)
		}
		if len(c.Kwargs) > 0 {
			args = append(args, "--kwargs", string(c.Kwargs))
		}
		out, err := siskin(t, args...)
		if want, ok := tmpl.Renders[conv]; ok {
			if err != nil || out != want {
				t.Errorf("%s %s:\n got %q (%v)\nwant %q", name, conv, out, err, want)
			}
		} else if err == nil {
			t.Errorf("%s %s: rendered, but jinja2 failed: %s", name, conv, tmpl.Errors[conv])
		}
	}
}

// A tokenizer-only folder: tokenizers/qwen3's tokenizer_config.json holds
// the same template as chat-templates/Qwen-Qwen3-0.6B.jinja (PROVENANCE.md).
func TestTemplateHFFolder(t *testing.T) {
	var g renderedAll
	readGolden(t, testdata.Path(t, "chat-templates", "golden", "rendered_all.json"), &g)
	checkTemplateCLI(t, &g, "Qwen-Qwen3-0.6B.jinja", testdata.Path(t, "tokenizers", "qwen3"))
}

// A GGUF whose tokenizer.chat_template is Gemma 2's, with the golden's
// bos_token "<|bos|>" as its BOS: the template writes BOS itself, and
// jinja2 refused the conversations with a system message.
func TestTemplateGGUF(t *testing.T) {
	var g renderedAll
	readGolden(t, testdata.Path(t, "chat-templates", "golden", "rendered_all.json"), &g)
	src, err := os.ReadFile(testdata.Path(t, "chat-templates", "google-gemma-2-2b-it.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	b := gguf.NewBuilder()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", []string{"<unk>", g.SpecialTokens["bos_token"], g.SpecialTokens["eos_token"], "▁"}},
		{"tokenizer.ggml.token_type", []int32{2, 3, 3, 1}},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.chat_template", string(src)},
	} {
		if err := b.Add(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	model := filepath.Join(t.TempDir(), "gemma2-template.gguf")
	if err := os.WriteFile(model, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkTemplateCLI(t, &g, "google-gemma-2-2b-it.jinja", model)
}

func TestTemplateOptionsAndErrors(t *testing.T) {
	qwen := testdata.Path(t, "tokenizers", "qwen3")
	dir := t.TempDir()
	msgs := filepath.Join(dir, "m.json")
	os.WriteFile(msgs, []byte(`{"messages":[{"role":"user","content":"Hi"}]}`), 0o644)
	// A request object works as well as a list; --no-generation-prompt
	// leaves the assistant turn closed (the Qwen3 template's own output).
	out, err := siskin(t, "template", "-m", qwen, "--messages", msgs, "--no-generation-prompt")
	if want := "<|im_start|>user\nHi<|im_end|>\n"; err != nil || out != want {
		t.Errorf("got %q (%v), want %q", out, err, want)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"role":"user"}`), 0o644)
	notJSON := filepath.Join(dir, "notjson.json")
	os.WriteFile(notJSON, []byte(`[{"role":`), 0o644)
	noTmpl := testdata.Path(t, "tokenizers", "llamacpp-vocab", "ggml-vocab-gpt-2.gguf")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"template", "--messages", msgs}, []string{"-m PATH is required"}},
		{[]string{"template", "-m", qwen}, []string{"--messages FILE.json is required"}},
		{[]string{"template", "-m", qwen, "--messages", "/nonexistent/m.json"}, []string{"/nonexistent/m.json"}},
		{[]string{"template", "-m", qwen, "--messages", bad}, []string{bad, `no "messages"`}},
		{[]string{"template", "-m", qwen, "--messages", notJSON}, []string{notJSON}},
		{[]string{"template", "-m", qwen, "--messages", msgs, "--tools", notJSON}, []string{"--tools", notJSON}},
		{[]string{"template", "-m", qwen, "--messages", msgs, "--kwargs", "[1]"}, []string{"--kwargs", "JSON object"}},
		{[]string{"template", "-m", noTmpl, "--messages", msgs}, []string{noTmpl, "no tokenizer.chat_template"}},
		{[]string{"template", "-m", testdata.Path(t, "tokenizers", "llama2", "PROVENANCE.md"), "--messages", msgs}, []string{"PROVENANCE.md", "not a GGUF file or Hugging Face folder"}},
	} {
		_, err := siskin(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to say %q", c.args[1:], err, w)
			}
		}
	}
}
