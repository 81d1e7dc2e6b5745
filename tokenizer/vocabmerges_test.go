package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// writeVocabMerges writes the Qwen3 tokenizer.json's BPE model as
// vocab.json and merges.txt (the form the official Qwen3-TTS repositories
// ship), beside its tokenizer_config.json.
func writeVocabMerges(t testing.TB) string {
	t.Helper()
	src := testdata.Path(t, "tokenizers", "qwen3")
	raw, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Model struct {
			Vocab  json.RawMessage `json:"vocab"`
			Merges [][2]string     `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	var merges strings.Builder
	merges.WriteString("#version: 0.2\n")
	for _, m := range tj.Model.Merges {
		merges.WriteString(m[0] + " " + m[1] + "\n")
	}
	cfg, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"vocab.json": tj.Model.Vocab, "merges.txt": []byte(merges.String()), "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Qwen3's vocabulary as vocab.json + merges.txt encodes the golden strings
// (tokenizers/golden/qwen3_vectors.json, @lenml/tokenizers on the
// tokenizer.json) to the same ids and decodes them back, special tokens
// from tokenizer_config.json included.
func TestVocabMergesQwen3(t *testing.T) {
	tk, err := Load(writeVocabMerges(t))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			Text    string `json:"text"`
			IDs     []int  `json:"ids"`
			Decoded string `json:"decoded"`
		} `json:"cases"`
	}
	readJSON(t, testdata.Path(t, "tokenizers", "golden", "qwen3_vectors.json"), &v)
	for _, g := range v.Cases {
		if got := tk.Encode(g.Text, EncodeOptions{ParseSpecial: true}); !slices.Equal(got, g.IDs) {
			t.Errorf("%q: %s", g.Text, diffIDs(tk, got, g.IDs))
		}
		if d := tk.Decode(g.IDs); d != g.Decoded {
			t.Errorf("Decode(%v) = %q, want %q", g.IDs, d, g.Decoded)
		}
	}
	// The Qwen3-TTS text wrapper: its special tokens are single ids (ids
	// from the vocabulary files and the TTS spec).
	got := tk.Encode("<|im_start|>assistant\nHi<|im_end|>\n<|im_start|>assistant\n", EncodeOptions{ParseSpecial: true})
	if want := []int{151644, 77091, 198, 13048, 151645, 198, 151644, 77091, 198}; !slices.Equal(got, want) {
		t.Errorf("wrapped text: %v, want %v", got, want)
	}
}

func TestVocabMergesErrors(t *testing.T) {
	cfg := []byte(`{"tokenizer_class": "Qwen2Tokenizer"}`)
	for _, c := range []struct {
		vocab, merges, cfg string
		want               string
	}{
		{`{"a": 0, "b": 1, "ab": 2}`, "#version: 0.2\na b c\n", string(cfg), `line 2: "a b c" is not two pieces`},
		{`{"a": 0`, "a b\n", string(cfg), "vocab.json: not valid JSON"},
		{`{"a": 0}`, "", `{"tokenizer_class": "GPT2Tokenizer"}`, `tokenizer_class "GPT2Tokenizer"`},
		{`{"a": -1}`, "", string(cfg), "vocab.json and merges.txt: negative id"},
	} {
		_, err := fromVocabMerges([]byte(c.vocab), []byte(c.merges), []byte(c.cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s / %q: error %v, want %q", c.vocab, c.merges, err, c.want)
		}
	}
}

// FuzzVocabMerges: any vocab.json and merges.txt load or fail cleanly,
// and what loads encodes and decodes without panicking.
func FuzzVocabMerges(f *testing.F) {
	cfg := []byte(`{"tokenizer_class": "Qwen2Tokenizer", "added_tokens_decoder": {"5": {"content": "<|x|>", "special": true}}}`)
	f.Add([]byte(`{"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4}`), []byte("#version: 0.2\na b\nĠ a\n"))
	f.Add([]byte(`{}`), []byte(""))
	f.Add([]byte(`{"a": 0, "a": 1}`), []byte("a a\n\n"))
	f.Fuzz(func(t *testing.T, vocab, merges []byte) {
		tk, err := fromVocabMerges(vocab, merges, cfg)
		if err != nil {
			return
		}
		tk.Decode(tk.Encode("ab a<|x|>ba", EncodeOptions{ParseSpecial: true}))
	})
}
