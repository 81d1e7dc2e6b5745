package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

func readGolden(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func joinIDs(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ")
}

// siskinStdin runs the CLI with stdin.
func siskinStdin(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := rootCmd()
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// siskin tokenize --ids on each kind of PATH reproduces the reference
// tokenizers' ids:
//   - a tokenizer-only folder (tokenizers/llama3_1): @lenml/tokenizers
//     3.7.2 encode() with special tokens added (tokenizers/golden);
//   - a SentencePiece .model (Mistral v3): sentencepiece 0.1.97 encode(),
//     no BOS, so with --no-special (golden/mistral_spm_vectors.json);
//   - a vocabulary-only GGUF (bert-bge): llama.cpp test-tokenizer-0,
//     no [CLS]/[SEP], so with --no-special (llamacpp-vocab/*.out);
//   - a model GGUF (stories260K): llama2.c encode() with BOS
//     (stories260K-llama2c/golden/tok512_encode_vectors.json).
func TestTokenizeIDs(t *testing.T) {
	var llama struct {
		Cases []struct {
			Text    string `json:"text"`
			Special []int  `json:"ids_with_special"`
		} `json:"cases"`
	}
	readGolden(t, testdata.Path(t, "tokenizers", "golden", "llama3_1_vectors.json"), &llama)
	var mistral struct {
		Cases []struct {
			Text string `json:"text"`
			V3   []int  `json:"v3"`
		} `json:"cases"`
	}
	readGolden(t, testdata.Path(t, "tokenizers", "golden", "mistral_spm_vectors.json"), &mistral)
	bertDir := testdata.Path(t, "tokenizers", "llamacpp-vocab")
	bertIn, err := os.ReadFile(filepath.Join(bertDir, "ggml-vocab-bert-bge.gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	bertOut, err := os.ReadFile(filepath.Join(bertDir, "ggml-vocab-bert-bge.gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	var stories struct {
		Cases []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids_with_bos"`
		} `json:"cases"`
	}
	readGolden(t, testdata.Path(t, "llm", "stories260K-llama2c", "golden", "tok512_encode_vectors.json"), &stories)

	c := llama.Cases[11]
	mc := mistral.Cases[32]
	sc := stories.Cases[1]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-m", testdata.Path(t, "tokenizers", "llama3_1"), "--ids", c.Text}, joinIDs(c.Special)},
		{[]string{"-m", testdata.Path(t, "tokenizers", "mistral", "mistral_instruct_tokenizer_240323.model.v3"), "--ids", "--no-special", mc.Text}, joinIDs(mc.V3)},
		{[]string{"-m", filepath.Join(bertDir, "ggml-vocab-bert-bge.gguf"), "--ids", "--no-special",
			strings.Split(string(bertIn), "\n__ggml_vocab_test__\n")[11]}, strings.TrimSpace(strings.Split(string(bertOut), "\n")[11])},
		{[]string{"-m", testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf"), "--ids", sc.Text}, joinIDs(sc.IDs)},
	} {
		out, err := siskin(t, append([]string{"tokenize"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if strings.TrimSpace(out) != tc.want || tc.want == "" {
			t.Errorf("%v:\n got %s\nwant %s", tc.args, strings.TrimSpace(out), tc.want)
		}
	}
}

// Without --ids each token is a line: its id and the quoted text it adds
// (llama2.c encodes "Once upon" as BOS, " Once", " upon").
func TestTokenizePieces(t *testing.T) {
	model := testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf")
	want := "      1  \"<s>\"\n    403  \" Once\"\n    407  \" upon\"\n"
	out, err := siskin(t, "tokenize", "-m", model, "Once", "upon")
	if err != nil || out != want {
		t.Errorf("got %q (%v), want %q", out, err, want)
	}
	// The text may come on stdin instead.
	out, err = siskinStdin(t, "Once upon", "tokenize", "-m", model)
	if err != nil || out != want {
		t.Errorf("stdin: got %q (%v), want %q", out, err, want)
	}
	// --no-special: no BOS, and "<s>" is text.
	out, err = siskin(t, "tokenize", "-m", model, "--ids", "--no-special", "<s>")
	if err != nil || strings.Contains(" "+strings.TrimSpace(out)+" ", " 1 ") {
		t.Errorf("--no-special: %q (%v)", out, err)
	}
}

func TestTokenizeErrors(t *testing.T) {
	notTok := testdata.Path(t, "tokenizers", "llama2", "PROVENANCE.md")
	noTokDir := testdata.Path(t, "tokenizers", "qwen3.5-0.8B")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"tokenize", "x"}, []string{"-m PATH is required"}},
		{[]string{"tokenize", "-m", "/nonexistent/tok.gguf", "x"}, []string{"/nonexistent/tok.gguf"}},
		{[]string{"tokenize", "-m", notTok, "x"}, []string{notTok, "not a GGUF file, tokenizer.json or SentencePiece model"}},
		{[]string{"tokenize", "-m", noTokDir, "x"}, []string{noTokDir, "no tokenizer.json or tokenizer.model"}},
	} {
		_, err := siskin(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to say %q", c.args, err, w)
			}
		}
	}
}
