package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// llamaCppVectors reads a NAME.gguf.inp/.out pair: the test strings and,
// for each, the ids llama.cpp gives.
func llamaCppVectors(t *testing.T, base string) ([]string, [][]int) {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(strings.TrimSuffix(string(inp), sep), sep)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(texts) != len(lines) {
		t.Fatalf("%s: %d inputs, %d outputs", base, len(texts), len(lines))
	}
	ids := make([][]int, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", base, i+1, err)
			}
			ids[i] = append(ids[i], id)
		}
	}
	return texts, ids
}

// vectorsWithoutGGUF names, for the staged vectors whose vocabulary GGUF
// is too large to be in the test data, the published tokenizer.json of the
// same vocabulary (tokenizers/PROVENANCE.md records the cross-check).
var vectorsWithoutGGUF = map[string]string{
	"qwen2":     "qwen3",
	"llama-bpe": "llama3_1",
	"gemma-4":   "gemma3",
}

// TestLlamaCppVocabs runs llama.cpp's own tokenizer vectors
// (tokenizers/llamacpp-vocab/*.gguf.inp/.out; llama.cpp c392e509
// test-tokenizer-0 passes them: common_tokenize with add_special and
// parse_special both false)
// on every vocabulary-only GGUF there, and the vectors of the absent
// qwen2/llama-bpe/gemma-4 GGUFs on the matching tokenizer.json. Vectors
// with neither (command-r, qwen35) are listed and skipped. Every id
// sequence also goes through the stream decoder.
func TestLlamaCppVocabs(t *testing.T) {
	dir := testdata.Path(t, "tokenizers", "llamacpp-vocab")
	inps, err := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf.inp"))
	if err != nil || len(inps) < 15 {
		t.Fatalf("%d vector files in %s (%v)", len(inps), dir, err)
	}
	tested := 0
	for _, inp := range inps {
		base := strings.TrimSuffix(inp, ".inp")
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(base), "ggml-vocab-"), ".gguf")
		var tk *Tokenizer
		source := filepath.Base(base)
		if _, err := os.Stat(base); err == nil {
			tk = loadGGUF(t, "tokenizers", "llamacpp-vocab", filepath.Base(base))
		} else if hf, ok := vectorsWithoutGGUF[name]; ok {
			tk = loadTokenizerDir(t, hf)
			source = hf + "/tokenizer.json"
		} else {
			t.Logf("%s: no vocabulary to test (GGUF not staged, no matching tokenizer.json)", name)
			continue
		}
		texts, want := llamaCppVectors(t, base)
		pass := 0
		for i, text := range texts {
			got := tk.Encode(text, EncodeOptions{})
			if !slices.Equal(got, want[i]) {
				t.Errorf("%s %q: %s", source, text, diffIDs(tk, got, want[i]))
				continue
			}
			checkStream(t, tk, got, DecodeOptions{})
			checkStream(t, tk, got, DecodeOptions{Continuation: true})
			pass++
		}
		tested++
		t.Logf("%s on %s: %d/%d", name, source, pass, len(texts))
	}
	if tested < 13 {
		t.Errorf("only %d vocabularies tested", tested)
	}
}
