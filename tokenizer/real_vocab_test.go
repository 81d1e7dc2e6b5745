package tokenizer

import (
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// cleanUpSpaces is transformers' clean_up_tokenization, which decoding
// applies when tokenizer_config.json sets clean_up_tokenization_spaces
// (Llama 3.1 does). The package does not do it: it loses text, and a
// streaming decoder cannot know what follows.
func cleanUpSpaces(s string) string {
	return strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'",
		" n't", "n't", " 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re").Replace(s)
}

// TestRealTokenizerJSON checks published tokenizer.json files (Qwen3,
// Llama 3.1, Gemma 3) against tokenizers/golden/*_vectors.json, made by
// @lenml/tokenizers 3.7.2 (a transformers.js fork): ids without and with
// special tokens added, and decode(ids). Their first 47 strings are
// llama.cpp's test strings; the same ids are llama.cpp's own for the
// matching GGUF vocabularies.
func TestRealTokenizerJSON(t *testing.T) {
	for _, c := range []struct {
		name    string
		cleanUp bool
	}{{"qwen3", false}, {"llama3_1", true}, {"gemma3", false}} {
		tk := loadTokenizerDir(t, c.name)
		var v struct {
			Cases []struct {
				Text    string `json:"text"`
				IDs     []int  `json:"ids"`
				Special []int  `json:"ids_with_special"`
				Decoded string `json:"decoded"`
			} `json:"cases"`
		}
		readJSON(t, testdata.Path(t, "tokenizers", "golden", c.name+"_vectors.json"), &v)
		pass := 0
		for _, g := range v.Cases {
			got := tk.Encode(g.Text, EncodeOptions{ParseSpecial: true})
			if !slices.Equal(got, g.IDs) {
				t.Errorf("%s %q: %s", c.name, g.Text, diffIDs(tk, got, g.IDs))
				continue
			}
			if got := tk.Encode(g.Text, EncodeOptions{ParseSpecial: true, AddSpecial: true}); !slices.Equal(got, g.Special) {
				t.Errorf("%s %q with special tokens: %s", c.name, g.Text, diffIDs(tk, got, g.Special))
				continue
			}
			d := tk.Decode(g.IDs)
			if c.cleanUp {
				d = cleanUpSpaces(d)
			}
			if d != g.Decoded {
				t.Errorf("%s: Decode(%v) = %q, want %q", c.name, g.IDs, d, g.Decoded)
				continue
			}
			checkStream(t, tk, g.IDs, DecodeOptions{})
			checkStream(t, tk, g.Special, DecodeOptions{})
			checkStream(t, tk, g.Special, DecodeOptions{SkipSpecial: true})
			pass++
		}
		if len(v.Cases) < 55 {
			t.Errorf("%s: only %d cases", c.name, len(v.Cases))
		}
		t.Logf("%s: %d/%d", c.name, pass, len(v.Cases))
	}
}
