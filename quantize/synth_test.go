package quantize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/tokenizer"
)

func synth(t *testing.T, arch, shape, typ string, seed uint64, threads int) string {
	t.Helper()
	ft, err := ParseFileType(typ)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), arch+"-"+shape+"-"+typ+".gguf")
	if _, err := Synth(out, SynthOptions{Arch: arch, Shape: shape, Archs: testArchs, Type: ft, Seed: seed, Threads: threads}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The tiny synthetic models have the test models' tensor names, shapes
// and (for Q4_K_M) llama.cpp's type mix, load, tokenize and run.
func TestSynthTinyLoadsAndRuns(t *testing.T) {
	for _, c := range []struct{ arch, ref string }{
		{"spark2_5", "spark2_5-tiny-q4_k_m.gguf"},
		{"qwen3", "qwen3-tiny-q4_k_m.gguf"},
		{"llama", "llama-tiny-q4_k_m.gguf"},
	} {
		t.Run(c.arch, func(t *testing.T) {
			path := synth(t, c.arch, "tiny", "q4_k_m", 7, 2)
			got, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			want, err := gguf.Open(tinyModel(t, c.ref))
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			if len(got.Tensors) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				g := got.Tensors[i]
				if g.Name != w.Name || g.Type != w.Type || g.Shape() != w.Shape() {
					t.Errorf("tensor %d: %s %s %s, want %s %s %s", i, g.Name, g.Type, g.Shape(), w.Name, w.Type, w.Shape())
				}
			}
			lm, err := openModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer lm.Close()
			if n := lm.Tokenizer.VocabSize(); n != 512 {
				t.Errorf("tokenizer has %d tokens, want 512", n)
			}
			ids := lm.Tokenizer.Encode("the cat sat on the mat", tokenizerOpts)
			if len(ids) == 0 {
				t.Fatal("empty encoding")
			}
			logits, err := lm.Model.Forward(lm.Model.NewCache(), ids, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(logits) != 512 {
				t.Fatalf("%d logits", len(logits))
			}
			for _, v := range logits {
				if v != v || v > 1e6 || v < -1e6 {
					t.Fatalf("logit %v", v)
				}
			}
		})
	}
}

// The same seed gives the same file whatever the thread count; another
// seed changes the weights.
func TestSynthReproducible(t *testing.T) {
	a, _ := os.ReadFile(synth(t, "spark2_5", "tiny", "q8_0", 1, 1))
	b, _ := os.ReadFile(synth(t, "spark2_5", "tiny", "q8_0", 1, 3))
	c, _ := os.ReadFile(synth(t, "spark2_5", "tiny", "q8_0", 2, 2))
	if !bytes.Equal(a, b) {
		t.Error("same seed, different thread count: files differ")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds: files are equal")
	}
}

var tokenizerOpts = tokenizer.EncodeOptions{}

// On the real Spark-X2.5-1.7B shapes the type mix gives exactly the model
// sizes llama-bench reported for llama.cpp's files (docs/performance.md).
func TestSynthSizesMatchLlamaCpp(t *testing.T) {
	for typ, want := range map[string]int64{"q4_k_m": 1102073856, "q4_0": 1030164480, "q8_0": 1814728704, "f16": 3415547904} {
		_, _, rep, err := planSynth(SynthOptions{Arch: "spark2_5", Shape: "1.7b", Archs: testArchs, Type: mustType(t, typ)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OutBytes != want {
			t.Errorf("%s: %d tensor bytes, want %d", typ, rep.OutBytes, want)
		}
		if typ == "q4_k_m" && rep.Elements() != 1707657216 {
			t.Errorf("%d parameters, want 1707657216", rep.Elements())
		}
	}
}
