package tokenizer

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// TestLlamaCppVocabs runs llama.cpp's own tokenizer vectors
// (tokenizers/llamacpp-vocab/*.gguf.inp/.out, which llama.cpp's
// test-tokenizer-0 passes: ids without BOS, special tokens not parsed) on
// the vocabulary-only GGUFs of the merge models this package supports.
func TestLlamaCppVocabs(t *testing.T) {
	dir := testdata.Path(t, "tokenizers", "llamacpp-vocab")
	for _, name := range []string{
		"llama-spm", "phi-3", // SentencePiece
		"gpt-2", "mpt", "falcon", "starcoder", "refact", "deepseek-coder", // byte-level BPE
	} {
		base := dir + "/ggml-vocab-" + name + ".gguf"
		tk := loadGGUF(t, "tokenizers", "llamacpp-vocab", "ggml-vocab-"+name+".gguf")
		inp, err := os.ReadFile(base + ".inp")
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(base + ".out")
		if err != nil {
			t.Fatal(err)
		}
		texts := strings.Split(strings.TrimSuffix(string(inp), "\n__ggml_vocab_test__\n"), "\n__ggml_vocab_test__\n")
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(texts) != len(lines) {
			t.Fatalf("%s: %d inputs, %d outputs", name, len(texts), len(lines))
		}
		pass := 0
		for i, text := range texts {
			var want []int
			for _, f := range strings.Fields(lines[i]) {
				var id int
				if _, err := fmt.Sscan(f, &id); err != nil {
					t.Fatal(err)
				}
				want = append(want, id)
			}
			got := tk.Encode(text, EncodeOptions{})
			if !slices.Equal(got, want) {
				t.Errorf("%s %q: %s", name, text, diffIDs(tk, got, want))
				continue
			}
			pass++
		}
		t.Logf("%s: %d/%d", name, pass, len(texts))
	}
}
