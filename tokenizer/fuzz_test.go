package tokenizer

import (
	"os"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// Run the fuzzers with a short minimization time, or a worker spends most
// of the run shrinking each new input:
//
//	go test -run NONE -fuzz FuzzEncodeByteLevel -fuzztime 30s -fuzzminimizetime 2s ./tokenizer

// FuzzEncodeByteLevel checks on the tiny byte-level BPE vocabulary (its
// tokenizer.json) that any input, valid UTF-8 or not, decodes back to
// itself, that ids are in range, and that streaming agrees with Decode.
func FuzzEncodeByteLevel(f *testing.F) {
	tk := loadHF(f, "spark2_5-tiny")
	for _, s := range []string{
		"", " ", "Hello, world!", "  leading\n\n\ttabs  ", "<|bos|>x<|eos|>", "<|bo",
		"123456789", "I'M you're", "ünïcödé 中文 😀", "\xff\xfe invalid \xc3", "\r\n\u00a0\u3000",
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, parseSpecial bool) {
		ids := tk.Encode(s, EncodeOptions{ParseSpecial: parseSpecial, AddSpecial: true})
		for _, id := range ids {
			if id < 0 || id >= tk.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		if got := tk.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
		if !parseSpecial && slices.ContainsFunc(ids, tk.IsSpecial) {
			t.Fatalf("%q: special id without ParseSpecial: %v", s, ids)
		}
		checkStream(t, tk, ids, DecodeOptions{})
	})
}

// FuzzTokenizerJSON checks that loading arbitrary bytes as tokenizer.json
// (and tokenizer_config.json) never panics, and that whatever loads can
// encode and decode without panicking.
func FuzzTokenizerJSON(f *testing.F) {
	dir := testdata.Path(f, "llm", "tiny", "hf", "spark2_5-tiny", "bf16")
	tj, err := os.ReadFile(dir + "/tokenizer.json")
	if err != nil {
		f.Fatal(err)
	}
	cfg, err := os.ReadFile(dir + "/tokenizer_config.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tj, cfg)
	f.Add(tj, []byte(nil))
	f.Fuzz(func(t *testing.T, tokJSON, cfgJSON []byte) {
		tk, err := FromTokenizerJSON(tokJSON, cfgJSON)
		if err != nil {
			return
		}
		for _, s := range []string{"Hello world 123 <|bos|>", "\xff ü"} {
			ids := tk.Encode(s, EncodeOptions{AddSpecial: true, ParseSpecial: true})
			tk.Decode(ids)
			d := tk.NewStreamDecoder()
			for _, id := range ids {
				d.Add(id)
			}
			d.Flush()
		}
		tk.Decode([]int{-1, 0, tk.VocabSize(), tk.BOS(), tk.EOS()})
	})
}

// FuzzSentencePieceModel checks that loading arbitrary bytes as a
// SentencePiece model never panics, and that whatever loads encodes and
// decodes without panicking and with ids in range. Seeds: a hand-made
// model (testSPModel) and the start of Llama 2's tokenizer.model.
func FuzzSentencePieceModel(f *testing.F) {
	f.Add(testSPModel(miniPieces, spBPE, false, true))
	f.Add(testSPModel(miniPieces, spBPE, true, false))
	if b, err := os.ReadFile(testdata.Path(f, "tokenizers", "llama2", "tokenizer.model")); err == nil {
		f.Add(b[:4096])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromSentencePiece(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab c", "<s>a<u>b \xff", "  x\n"} {
			for _, opt := range []EncodeOptions{{}, {AddSpecial: true, ParseSpecial: true}} {
				ids := tk.Encode(s, opt)
				for _, id := range ids {
					if id < 0 || id >= tk.VocabSize() {
						t.Fatalf("Encode(%q): id %d out of range", s, id)
					}
				}
				checkStream(t, tk, ids, DecodeOptions{})
			}
		}
		tk.Decode([]int{-1, 0, tk.VocabSize(), tk.BOS(), tk.EOS()})
	})
}

// FuzzEncodeLlama3 checks decode(encode(x)) == x on Llama 3.1's real
// tokenizer.json (byte-level, no normalizer), whose pre-tokenizer runs on
// the hand-written scanner, with its merges and ignore_merges.
func FuzzEncodeLlama3(f *testing.F) {
	tk := loadTokenizerDir(f, "llama3_1")
	for _, s := range fastSplitSamples {
		f.Add(s)
	}
	f.Add(mixedText[:600])
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s, EncodeOptions{})
		if got := tk.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
		checkStream(t, tk, ids, DecodeOptions{})
	})
}
