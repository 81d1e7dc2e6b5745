package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// The split behaviors follow the example in the Hugging Face tokenizers
// documentation: "the-final--countdown" split on "-".
func TestSplitBehaviors(t *testing.T) {
	for name, want := range map[string]string{
		"Removed":            "the|final|countdown",
		"Isolated":           "the|-|final|-|-|countdown",
		"MergedWithPrevious": "the-|final-|-|countdown",
		"MergedWithNext":     "the|-final|-|-countdown",
		"Contiguous":         "the|-|final|--|countdown",
	} {
		s, err := newRegexSplit(quoteRegex("-"), splitBehaviors[name], false)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(s.split([]string{"the-final--countdown"}), "|"); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// invert: the pattern matches the words.
	s, _ := newRegexSplit(`\w+`, splitRemoved, true)
	if got := strings.Join(s.split([]string{"a, bc d"}), "|"); got != "a|bc|d" {
		t.Errorf("inverted Removed: %s", got)
	}
	// Invalid UTF-8 keeps its bytes through the rune-based regex engine.
	s, _ = newRegexSplit(`\p{L}+`, splitIsolated, false)
	if got := strings.Join(s.split([]string{"ab\xffcd\xe2\x82"}), "|"); got != "ab|\xff|cd|\xe2\x82" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

// A byte-level BPE tokenizer.json written by hand: prefix space, a BOS
// template, a special token that swallows the spaces after it.
func TestTokenizerJSONByteLevelMini(t *testing.T) {
	tj := `{"added_tokens":[{"id":0,"content":"<s>","special":true,"rstrip":true},
	  {"id":7,"content":"[x]","special":false,"lstrip":true,"single_word":true}],
	 "pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true},
	 "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}],
	   "special_tokens":{"<s>":{"id":"<s>","ids":[0]}}},
	 "decoder":{"type":"ByteLevel"},
	 "model":{"type":"BPE","vocab":{"<s>":0,"Ġ":1,"a":2,"b":3,"Ġa":4,"ab":5,"Ġab":6},"merges":["Ġ a","a b","Ġa b"]}}`
	tk, err := FromTokenizerJSON([]byte(tj), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !tk.AddBOS() || tk.BOS() != 0 || tk.EOS() != -1 || tk.VocabSize() != 8 {
		t.Fatalf("AddBOS %v BOS %d EOS %d vocab %d", tk.AddBOS(), tk.BOS(), tk.EOS(), tk.VocabSize())
	}
	for _, c := range []struct {
		text string
		opt  EncodeOptions
		want []int
	}{
		{"ab", EncodeOptions{AddSpecial: true}, []int{0, 6}},
		{"ab ab", EncodeOptions{}, []int{6, 6}},
		{"<s>   ab", EncodeOptions{ParseSpecial: true}, []int{0, 6}}, // rstrip
		{"<s>ab", EncodeOptions{}, []int{1, 5}},                      // as text: " <", "s", ">", "ab"; bytes absent from the vocabulary are dropped
		{"ab  [x]", EncodeOptions{}, []int{6, 7}},                    // lstrip, non-special: always matched
		{"ab[x]", EncodeOptions{}, []int{6}},                         // single_word: inside a word it is text (absent bytes)
	} {
		if got := tk.Encode(c.text, c.opt); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %+v) = %v, want %v", c.text, c.opt, got, c.want)
		}
	}
	if d := tk.Decode([]int{0, 6, 4, 7}); d != "<s> ab a[x]" {
		t.Errorf("Decode: %q", d)
	}
}

// A hand-written tokenizer.json of the Llama 2 / Gemma kind: normalizer
// spaces to "▁", characters with byte fallback, decoder undoing both.
func TestTokenizerJSONByteFallbackMini(t *testing.T) {
	tj := `{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
	 "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
	 "model":{"type":"BPE","unk_token":"<unk>","byte_fallback":true,"fuse_unk":true,
	   "vocab":{"<unk>":0,"<0x41>":1,"▁":2,"h":3,"i":4,"▁h":5,"▁hi":6},"merges":[["▁","h"],["▁h","i"]]}}`
	tk, err := FromTokenizerJSON([]byte(tj), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"hi A", []int{6, 2, 1}},
		{"hi éé", []int{6, 2, 0}}, // no <0xC3>: one fused unknown token
		{"", nil},
	} {
		if got := tk.Encode(c.text, EncodeOptions{}); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if d := tk.Decode([]int{6, 2, 1}); d != "hi A" {
		t.Errorf("Decode = %q", d)
	}
	if d := tk.DecodeWith([]int{6, 2, 1}, DecodeOptions{Continuation: true}); d != " hi A" {
		t.Errorf("Decode continuation = %q", d)
	}
}

func TestTokenizerJSONErrors(t *testing.T) {
	for name, tj := range map[string]string{
		"not json":     `{`,
		"unigram":      `{"model":{"type":"Unigram","vocab":[["a",0]]}}`,
		"sparse ids":   `{"model":{"type":"BPE","vocab":{"a":100000},"merges":[]},"decoder":{"type":"ByteLevel"}}`,
		"negative id":  `{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]},"decoder":{"type":"ByteLevel"}}`,
		"bad regex":    `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"ByteLevel"}}`,
		"unknown step": `{"pre_tokenizer":{"type":"BertPreTokenizer"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"ByteLevel"}}`,
		"no decoder":   `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"bad merge":    `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a"]},"decoder":{"type":"ByteLevel"}}`,
	} {
		if _, err := FromTokenizerJSON([]byte(tj), nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Encode shares only the word cache between goroutines.
func TestConcurrentEncode(t *testing.T) {
	tk := loadHF(t, "spark2_5-tiny")
	want := tk.Encode("The quick brown fox 123, ünïcödé <|eos|>", EncodeOptions{ParseSpecial: true})
	done := make(chan []int)
	for range 8 {
		go func() {
			var got []int
			for range 200 {
				got = tk.Encode("The quick brown fox 123, ünïcödé <|eos|>", EncodeOptions{ParseSpecial: true})
			}
			done <- got
		}()
	}
	for range 8 {
		if got := <-done; !slices.Equal(got, want) {
			t.Errorf("concurrent Encode: %v, want %v", got, want)
		}
	}
}

// Every llama.cpp pre-tokenizer pattern compiles (a bad one would panic
// when a GGUF naming it loads).
func TestGGUFPrePatternsCompile(t *testing.T) {
	for name, pre := range ggufPres {
		for _, p := range pre.patterns {
			if _, err := compileRegex(p); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// A zero-width match cuts the text, as in Hugging Face's Split and
// llama.cpp's regex split: SuperBPE groups digits in threes from the
// right with a lookahead that matches nothing.
func TestZeroWidthSplit(t *testing.T) {
	words := []string{"x1234567 89"}
	for _, p := range ggufPres["superbpe"].patterns {
		s, err := newRegexSplit(p, splitIsolated, false)
		if err != nil {
			t.Fatal(err)
		}
		words = s.split(words)
	}
	if got := strings.Join(words, "|"); got != "x|1|234|567| |89" {
		t.Errorf("got %q", got)
	}
}

// With special tokens a WordPiece vocabulary wraps the text as
// [CLS] ... [SEP] (BERT's convention; llama.cpp's add_bos/add_sep defaults
// for WPM), around the ids llama.cpp's vectors give for "Hello world".
func TestBertSpecialTokens(t *testing.T) {
	tk := loadGGUF(t, "tokenizers", "llamacpp-vocab", "ggml-vocab-bert-bge.gguf")
	if got := tk.Encode("Hello world", EncodeOptions{AddSpecial: true}); !slices.Equal(got, []int{101, 7592, 2088, 102}) {
		t.Errorf("got %v", got)
	}
	if got := tk.Encode("[CLS] x", EncodeOptions{ParseSpecial: true}); !slices.Equal(got, []int{101, 1060}) {
		t.Errorf("[CLS] parsed: got %v", got)
	}
}
