package synth

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/safetensors"
	"github.com/siskin-ml/siskin/tokenizer"
)

// TestPlanCounts: the tensor inventories match the counts the specs give
// for the official checkpoints (talker: qwen3_tts_talker.md §3; codec
// decoder: qwen3_tts_codec.md §2).
func TestPlanCounts(t *testing.T) {
	for _, c := range []struct {
		shape                string
		talkerN, codecN      int
		talkerP, codecParams int64
	}{
		{"0.6b", 402, 271, 905788672, 114323137},
		{"1.7b", 404, 271, 1916676352, 114323137},
	} {
		_, _, rep, err := Plan(c.shape)
		if err != nil {
			t.Fatal(err)
		}
		if rep.TalkerTensors != c.talkerN || rep.TalkerParams != c.talkerP || rep.CodecTensors != c.codecN || rep.CodecParams != c.codecParams {
			t.Errorf("%s: talker %d tensors %d params, codec %d tensors %d params; want %d %d %d %d", c.shape,
				rep.TalkerTensors, rep.TalkerParams, rep.CodecTensors, rep.CodecParams, c.talkerN, c.talkerP, c.codecN, c.codecParams)
		}
	}
	if _, _, _, err := Plan("7b"); err == nil {
		t.Error("unknown shape accepted")
	}
}

// readDir returns every file of a folder tree by relative path.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return nil
	})
	return out
}

// TestTinySameBytes: the same seed gives the same bytes, another seed
// other weights.
func TestTinySameBytes(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for i, dir := range []string{a, b, c} {
		if _, err := Write(dir, Options{Shape: "tiny", Seed: uint64(1 + i/2)}); err != nil {
			t.Fatal(err)
		}
	}
	fa, fb, fc := readDir(t, a), readDir(t, b), readDir(t, c)
	want := []string{"config.json", "generation_config.json", "merges.txt", "model.safetensors", "speech_tokenizer/config.json",
		"speech_tokenizer/model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.json"}
	var names []string
	for n := range fa {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	for n := range fa {
		if !bytes.Equal(fa[n], fb[n]) {
			t.Errorf("%s differs between two runs with seed 1", n)
		}
	}
	if bytes.Equal(fa["model.safetensors"], fc["model.safetensors"]) {
		t.Error("seeds 1 and 2 wrote the same weights")
	}
}

// TestTinyLoads: the folder's parts load: the talker weights in BF16 with
// the official names, the tokenizer with the TTS special tokens at the
// config's ids, and the codec, which decodes any codes below 2048 to a
// finite, non-silent waveform.
func TestTinyLoads(t *testing.T) {
	dir := t.TempDir()
	rep, err := Write(dir, Options{Shape: "tiny", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	talker, _, _, _ := Plan("tiny")
	if len(f.Tensors) != len(talker) || len(talker) != rep.TalkerTensors {
		t.Fatalf("%d tensors in the file, %d planned", len(f.Tensors), len(talker))
	}
	for _, n := range talker {
		ti, ok := f.Tensor(n)
		if !ok || ti.Type.String() != "BF16" {
			t.Fatalf("tensor %s missing or not BF16", n)
		}
	}
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode("<|im_start|>assistant\nhello there<|im_end|><tts_pad><tts_text_bos><tts_text_eod>", tokenizer.EncodeOptions{ParseSpecial: true})
	for _, id := range []int{900, 901, 927, 928, 929} {
		if !slices.Contains(ids, id) {
			t.Errorf("special id %d not in %v", id, ids)
		}
	}
	dec, err := codec.Load(filepath.Join(dir, "speech_tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	if c := dec.Config(); c.CodebookSize != 2048 || c.SamplesPerFrame() != 1920 {
		t.Fatalf("codec config %+v", c)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	codes := make([]int32, 16*20)
	for i := range codes {
		codes[i] = int32(rng.IntN(2048))
	}
	wav, err := dec.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	var ss float64
	for _, v := range wav {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite sample")
		}
		ss += float64(v) * float64(v)
	}
	rms := math.Sqrt(ss / float64(len(wav)))
	t.Logf("tiny synth codec: 20 random frames, rms %.3f", rms)
	if rms < 1e-3 || rms > 0.9 {
		t.Errorf("waveform rms %g: silent or clipped", rms)
	}
}
