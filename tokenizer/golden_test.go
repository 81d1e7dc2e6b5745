package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/testdata"
)

// Goldens used here, and what produced them:
//   - llm/tiny/golden/tokenizer_tiny.json: llama-tokenize (llama.cpp) on the
//     tiny GGUF vocabulary (gpt2, pre=default), no BOS.
//   - llm/tiny/hf/*/golden/tokenizer_vectors.json: llama-tokenize with
//     parse_special and no BOS on the GGUF vocabulary; the file records that
//     the Python and JavaScript tokenizer.json implementations give the same
//     ids and decode every string back.
//   - llm/tiny/hf/spark2_5-tiny/golden/chat_*.prompt_ids.txt: the prompt ids
//     of the float64 reference run (Hugging Face tokenizer on the twin's
//     tokenizer.json, special tokens parsed, no BOS added).
//   - llm/stories260K-llama2c/golden/tok512_encode_vectors.json and
//     greedy_prompt*.json: llama2.c run.c encode() (BOS, no EOS) and its
//     greedy generations; llama2.c's tok512.bin is the GGUF vocabulary
//     exported, and llama-tokenize agrees on the prompt ids.
//   - llm/stories260K-gguf/golden/llama-simple_*.txt: llama.cpp llama-simple
//     stdout, each token printed as its piece.

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Fields(string(b)) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func loadGGUF(t testing.TB, elem ...string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(testdata.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func loadHF(t testing.TB, model string) *Tokenizer {
	t.Helper()
	tk, err := FromHFDir(testdata.Path(t, "llm", "tiny", "hf", model, "bf16"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

var (
	dirTokMu sync.Mutex
	dirToks  = map[string]*Tokenizer{}
)

// loadTokenizerDir loads tokenizers/NAME (tokenizer.json and
// tokenizer_config.json) once per test binary: the large files take
// seconds to parse.
func loadTokenizerDir(t testing.TB, name string) *Tokenizer {
	t.Helper()
	dirTokMu.Lock()
	defer dirTokMu.Unlock()
	if tk, ok := dirToks[name]; ok {
		return tk
	}
	tk, err := FromHFDir(testdata.Path(t, "tokenizers", name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dirToks[name] = tk
	return tk
}

// tinyTokenizers returns the tiny byte-level BPE vocabulary from every
// source that holds it: three GGUF files and two tokenizer.json twins.
func tinyTokenizers(t *testing.T) map[string]*Tokenizer {
	return map[string]*Tokenizer{
		"spark2_5-tiny.gguf": loadGGUF(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf"),
		"qwen3-tiny.gguf":    loadGGUF(t, "llm", "tiny", "models", "qwen3-tiny-f32.gguf"),
		"llama-tiny.gguf":    loadGGUF(t, "llm", "tiny", "models", "llama-tiny-q4_k_m.gguf"),
		"spark2_5-tiny.hf":   loadHF(t, "spark2_5-tiny"),
		"qwen3-tiny.hf":      loadHF(t, "qwen3-tiny"),
	}
}

type idCase struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

// diffIDs describes the first difference between two id lists.
func diffIDs(tk *Tokenizer, got, want []int) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	piece := func(ids []int) string {
		if i < len(ids) {
			return strconv.Quote(tk.Piece(ids[i]))
		}
		return "end"
	}
	return "first difference at " + strconv.Itoa(i) + ": got " + piece(got) + ", want " + piece(want)
}

func TestTinyVectors(t *testing.T) {
	var tiny struct {
		Cases []idCase `json:"cases"`
	}
	readJSON(t, testdata.Path(t, "llm", "tiny", "golden", "tokenizer_tiny.json"), &tiny)
	sets := map[string][]idCase{"tokenizer_tiny.json": tiny.Cases}
	for _, m := range []string{"spark2_5-tiny", "qwen3-tiny"} {
		var v struct {
			N     int      `json:"n_strings"`
			Cases []idCase `json:"cases"`
		}
		readJSON(t, testdata.Path(t, "llm", "tiny", "hf", m, "golden", "tokenizer_vectors.json"), &v)
		if len(v.Cases) != v.N || v.N != 254 {
			t.Fatalf("%s vectors: %d cases, header says %d", m, len(v.Cases), v.N)
		}
		sets[m+"/tokenizer_vectors.json"] = v.Cases
	}
	for name, tk := range tinyTokenizers(t) {
		if tk.AddBOS() || tk.BOS() != 0 || tk.EOS() != 1 || !tk.IsEOG(1) || tk.VocabSize() != 512 {
			t.Errorf("%s: AddBOS %v BOS %d EOS %d vocab %d", name, tk.AddBOS(), tk.BOS(), tk.EOS(), tk.VocabSize())
		}
		for set, cases := range sets {
			pass := 0
			for _, c := range cases {
				got := tk.Encode(c.Text, EncodeOptions{AddSpecial: true, ParseSpecial: true})
				if !slices.Equal(got, c.IDs) {
					t.Errorf("%s %s: %q: %s", name, set, c.Text, diffIDs(tk, got, c.IDs))
					continue
				}
				// Byte-level BPE loses nothing: decoding gives the text back.
				if d := tk.Decode(got); d != c.Text {
					t.Errorf("%s %s: Decode(Encode(%q)) = %q", name, set, c.Text, d)
					continue
				}
				pass++
			}
			t.Logf("%s %s: %d/%d", name, set, pass, len(cases))
		}
	}
}

func TestSparkChatPrompts(t *testing.T) {
	dir := []string{"llm", "tiny", "hf", "spark2_5-tiny", "golden"}
	for _, name := range []string{"chat_tinyspecial", "chat_verbatim"} {
		text, err := os.ReadFile(testdata.Path(t, append(dir, name+".txt")...))
		if err != nil {
			t.Fatal(err)
		}
		want := readIDs(t, testdata.Path(t, append(dir, name+".prompt_ids.txt")...))
		for tn, tk := range tinyTokenizers(t) {
			// The template writes BOS itself: AddSpecial adds nothing here.
			got := tk.Encode(string(text), EncodeOptions{AddSpecial: true, ParseSpecial: true})
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: %d ids, want %d; %s", tn, name, len(got), len(want), diffIDs(tk, got, want))
			}
			if d := tk.Decode(got); d != string(text) {
				t.Errorf("%s %s: Decode does not give the prompt back", tn, name)
			}
		}
		t.Logf("%s: %d ids", name, len(want))
	}
	// Without special parsing "<|bos|>" is text.
	tk := loadHF(t, "spark2_5-tiny")
	if ids := tk.Encode("<|bos|>", EncodeOptions{}); len(ids) < 2 || slices.Contains(ids, 0) {
		t.Errorf("<|bos|> without ParseSpecial: %v", ids)
	}
}

func TestStories260K(t *testing.T) {
	tk := loadGGUF(t, "llm", "stories260K-gguf", "stories260K.gguf")
	if !tk.AddBOS() || tk.BOS() != 1 || tk.EOS() != 2 || !tk.IsEOG(2) || tk.VocabSize() != 512 {
		t.Fatalf("AddBOS %v BOS %d EOS %d vocab %d", tk.AddBOS(), tk.BOS(), tk.EOS(), tk.VocabSize())
	}
	var vec struct {
		Cases []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids_with_bos"`
		} `json:"cases"`
	}
	readJSON(t, testdata.Path(t, "llm", "stories260K-llama2c", "golden", "tok512_encode_vectors.json"), &vec)
	for _, c := range vec.Cases {
		got := tk.Encode(c.Text, EncodeOptions{AddSpecial: true})
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%q: got %v want %v", c.Text, got, c.IDs)
		}
		// The leading "▁" added on encoding is dropped on decoding.
		if d := tk.Decode(got[1:]); d != c.Text {
			t.Errorf("Decode(Encode(%q)) = %q", c.Text, d)
		}
	}
	t.Logf("tok512_encode_vectors: %d cases", len(vec.Cases))

	for i := range 4 {
		var g struct {
			Prompt       string `json:"prompt"`
			PromptTokens []int  `json:"prompt_tokens"`
			Tokens       []int  `json:"tokens"`
			Text         string `json:"text"`
		}
		readJSON(t, testdata.Path(t, "llm", "stories260K-llama2c", "golden", "greedy_prompt"+strconv.Itoa(i)+".json"), &g)
		got := tk.Encode(g.Prompt, EncodeOptions{AddSpecial: true})
		if !slices.Equal(got, g.PromptTokens) {
			t.Errorf("prompt %q: got %v want %v", g.Prompt, got, g.PromptTokens)
		}
		// llama2.c prints the generation without BOS and with the space
		// after BOS stripped: the same as decoding the ids after BOS.
		gen := g.Tokens[1:]
		if j := slices.Index(gen, 1); j >= 0 {
			gen = gen[:j] // stopped when BOS was sampled
		}
		if d := tk.Decode(gen); d != g.Text {
			t.Errorf("prompt %d: decoded text differs:\n got %q\nwant %q", i, d, g.Text)
		}
		if i == 0 {
			continue
		}
		// llama-simple prints each token's piece (BOS as "<s>") and a final
		// newline; it generated 128 tokens after the prompt.
		out, err := os.ReadFile(testdata.Path(t, "llm", "stories260K-gguf", "golden", "llama-simple_greedy_n128_prompt"+strconv.Itoa(i)+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		ids := g.Tokens[:min(len(g.Tokens), len(g.PromptTokens)+128)]
		if d := tk.Decode(ids) + "\n"; d != string(out) {
			t.Errorf("llama-simple prompt %d:\n got %q\nwant %q", i, d, out)
		}
		// With ParseSpecial, "<s>" is BOS, and the text after it gets the
		// dummy-prefix space as at the start of the input (llama.cpp).
		if pre := tk.Encode("<s>"+g.Prompt, EncodeOptions{ParseSpecial: true}); !slices.Equal(pre, g.PromptTokens) {
			t.Errorf("<s> %q with ParseSpecial: %v", g.Prompt, pre)
		}
	}
}
