package qwen3

import (
	"testing"

	"github.com/siskin-ml/siskin/internal/modeltest"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

func open(t testing.TB, path string) *Model {
	t.Helper()
	s, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tiny(t testing.TB, elem ...string) string {
	return testdata.Path(t, append([]string{"llm", "tiny"}, elem...)...)
}

// Tolerance 1e-4 max abs against the float64 reference; llama.cpp is at
// 9.7e-6 on the same run.
func TestF32AgainstReference(t *testing.T) {
	m := open(t, tiny(t, "models", "qwen3-tiny-f32.gguf"))
	g := modeltest.Load(t, tiny(t, "golden", "ref"), "qwen3-tiny-f32.ref")
	modeltest.CheckExact(t, modeltest.WithKV(m, kv.F32), g, 1e-4)
}

// The same run with the default f16 KV cache: keys and values rounded to
// halves (relative error 2^-11) move the logits by up to about 1e-2 here;
// tolerance 3e-2 max abs, and the greedy tokens must not change.
func TestF32WeightsF16KVAgainstReference(t *testing.T) {
	m := open(t, tiny(t, "models", "qwen3-tiny-f32.gguf"))
	g := modeltest.Load(t, tiny(t, "golden", "ref"), "qwen3-tiny-f32.ref")
	modeltest.CheckExact(t, modeltest.WithKV(m, kv.F16), g, 3e-2)
}

func TestHFBF16AgainstReference(t *testing.T) {
	m := open(t, tiny(t, "hf", "qwen3-tiny", "bf16"))
	g := modeltest.Load(t, tiny(t, "hf", "qwen3-tiny", "golden"), "qwen3-tiny.hf-bf16.ref")
	modeltest.CheckExact(t, modeltest.WithKV(m, kv.F32), g, 1e-4)
}

// See the spark2_5 test for why RMS 0.25 and margin 0.5.
func TestQ4KMAgainstLlamaCpp(t *testing.T) {
	m := open(t, tiny(t, "models", "qwen3-tiny-q4_k_m.gguf"))
	g := modeltest.Load(t, tiny(t, "golden", "llamacpp"), "qwen3-tiny-q4_k_m")
	modeltest.CheckQuantized(t, modeltest.WithKV(m, kv.F32), g, 0.25, 0.5) // llama.cpp ran an F32 KV cache
}

func BenchmarkForward(b *testing.B) {
	for _, q := range []string{"f32", "q4_k_m"} {
		b.Run(q, func(b *testing.B) {
			m := open(b, tiny(b, "models", "qwen3-tiny-"+q+".gguf"))
			b.Run("decode", func(b *testing.B) { modeltest.BenchDecode(b, m) })
			b.Run("prefill64", func(b *testing.B) { modeltest.BenchPrefill(b, m) })
		})
	}
}

func TestBatchInvariance(t *testing.T) {
	m := open(t, tiny(t, "hf", "qwen3-tiny", "bf16"))
	g := modeltest.Load(t, tiny(t, "golden", "ref"), "qwen3-tiny-f32.ref")
	modeltest.CheckBatchInvariance(t, m, g.PromptIDs)
}

func TestStepAllocs(t *testing.T) {
	m := open(t, tiny(t, "hf", "qwen3-tiny", "bf16"))
	g := modeltest.Load(t, tiny(t, "golden", "ref"), "qwen3-tiny-f32.ref")
	modeltest.CheckStepAllocs(t, m, g.PromptIDs)
}
