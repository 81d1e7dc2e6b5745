package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/gguf"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// rewrite copies a GGUF file through the builder, letting edit change
// metadata and tensors on the way.
func rewrite(t *testing.T, src string, editKV func(k string, v any) (any, bool), editTensor func(ti *gguf.TensorInfo) bool) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := gguf.NewBuilder()
	for _, kv := range f.KV {
		v, keep := kv.Value, true
		if editKV != nil {
			v, keep = editKV(kv.Key, v)
		}
		if keep {
			if err := b.Add(kv.Key, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range f.Tensors {
		ti := f.Tensors[i]
		ti.Dims = append([]uint64(nil), ti.Dims...)
		if editTensor != nil && !editTensor(&ti) {
			continue
		}
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenAllArchitectures(t *testing.T) {
	for _, p := range [][]string{
		{"stories260K-gguf", "stories260K.gguf"},
		{"tiny", "models", "qwen3-tiny-q4_k_m.gguf"},
		{"tiny", "models", "spark2_5-tiny-q4_0.gguf"},
		{"tiny", "hf", "qwen3-tiny", "bf16"},
		{"tiny", "hf", "spark2_5-tiny", "bf16"},
	} {
		l, err := Open(testdata.Path(t, append([]string{"llm"}, p...)...))
		if err != nil {
			t.Fatal(err)
		}
		c := l.Model.Config()
		if l.Tokenizer.VocabSize() != c.Vocab || l.Model.WeightBytes() <= 0 {
			t.Errorf("%v: vocab %d/%d, weight bytes %d", p, l.Tokenizer.VocabSize(), c.Vocab, l.Model.WeightBytes())
		}
		// A token reads one row of an embedding the output head does not
		// share; a tied one is the head, read whole.
		want := l.Model.HeldBytes()
		if !c.Tied {
			emb, err := l.Source.Matrix(model.Names{GGUF: "token_embd.weight"}, 0, c.Vocab, c.Hidden)
			if err != nil {
				t.Fatal(err)
			}
			want -= int64(len(emb.Data) - len(emb.Data)/c.Vocab)
		}
		if got := l.Model.WeightBytes(); got != want {
			t.Errorf("%v (tied %v): %d weight bytes read per token, want %d of %d held", p, c.Tied, got, want, l.Model.HeldBytes())
		}
		t.Logf("%v: tied %v, %d of %d bytes read per token", p, c.Tied, l.Model.WeightBytes(), l.Model.HeldBytes())
		l.Close()
	}
}

func TestRejectsBrokenModels(t *testing.T) {
	src := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_0.gguf")
	cases := []struct {
		name string
		path string
		want []string
	}{
		{"wrong shape", rewrite(t, src, nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.2.ffn_up.weight" {
				ti.Dims[1] = 384
				ti.Data = ti.Data[:len(ti.Data)/2]
			}
			return true
		}), []string{"blk.2.ffn_up.weight", "shape [384 256]", "want [768 256]"}},
		{"missing tensor", rewrite(t, src, nil, func(ti *gguf.TensorInfo) bool { return ti.Name != "blk.5.attn_gate.weight" }),
			[]string{"blk.5.attn_gate.weight", "missing"}},
		{"unsupported type", rewrite(t, src, nil, func(ti *gguf.TensorInfo) bool {
			if ti.Name == "blk.0.ffn_down.weight" {
				ti.Type = tensor.IQ4_NL // same block size and bytes as Q4_0
			}
			return true
		}), []string{"blk.0.ffn_down.weight", "IQ4_NL", "does not read"}},
		{"missing key", rewrite(t, src, func(k string, v any) (any, bool) { return v, k != "spark2_5.block_count" }, nil),
			[]string{"spark2_5.block_count", "missing"}},
		{"bad pattern", rewrite(t, src, func(k string, v any) (any, bool) {
			if k == "spark2_5.attention.sliding_window_pattern" {
				return []bool{true}, true
			}
			return v, true
		}, nil), []string{"sliding_window_pattern"}},
		{"heads do not divide", rewrite(t, src, func(k string, v any) (any, bool) {
			if k == "spark2_5.attention.head_count_kv" {
				return uint32(3), true
			}
			return v, true
		}, nil), []string{"not a multiple"}},
		{"unknown architecture", rewrite(t, src, func(k string, v any) (any, bool) {
			if k == "general.architecture" {
				return "mamba", true
			}
			return v, true
		}, nil), []string{"mamba", "not supported"}},
	}
	for _, c := range cases {
		l, err := Open(c.path)
		if err == nil {
			l.Close()
			t.Errorf("%s: accepted", c.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.path) {
			t.Errorf("%s: error %q does not name the file", c.name, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not say %q", c.name, msg, w)
			}
		}
	}

	// Truncated at every 1/16th of the file: refused, never a panic.
	data, _ := os.ReadFile(src)
	for i := 1; i < 16; i++ {
		p := filepath.Join(t.TempDir(), "cut.gguf")
		os.WriteFile(p, data[:len(data)*i/16], 0o644)
		if l, err := Open(p); err == nil {
			l.Close()
			t.Errorf("file cut to %d/16 accepted", i)
		}
	}
}

func TestRejectsBrokenHFFolder(t *testing.T) {
	src := testdata.Path(t, "llm", "tiny", "hf", "qwen3-tiny", "bf16")
	dir := t.TempDir()
	for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	cfg, _ := os.ReadFile(filepath.Join(src, "config.json"))
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(cfg), `"intermediate_size": 768`, `"intermediate_size": 700`, 1)), 0o644)
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "mlp.gate_proj.weight") || !strings.Contains(err.Error(), "[700 256]") {
		t.Errorf("wrong intermediate_size: got %v", err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3", `), 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("broken config.json: got %v", err)
	}
}
