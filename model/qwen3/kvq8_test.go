package qwen3

import (
	"testing"

	"github.com/siskin-ml/siskin/internal/modeltest"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/sample"
)

// TestKVTypesAgainstF32Cache: the prompt logits of the tiny Qwen3 (f32
// weights, 64 prompt tokens) with an f16 and a q8_0 cache against the
// same run with a float32 cache: the max abs difference and how often the
// top-1 token agrees, logged for both so the two can be compared. This
// model's logits are close together (greedy margins down to 0.06), so
// rounding shows: measured f16 0.0083 and 64 of 64, q8_0 0.184 and 60 of
// 64 where its dots are float32 (AVX2, generic), 0.253 and 62 of 64 where
// they are int8 dots of a q8_0-quantized query (AVX-512, as llama.cpp's
// CPU attention over a q8_0 cache); tolerances 3e-2 and all for f16, 0.3
// and 56 for q8_0.
func TestKVTypesAgainstF32Cache(t *testing.T) {
	m := open(t, tiny(t, "models", "qwen3-tiny-f32.gguf"))
	g := modeltest.Load(t, tiny(t, "golden", "ref"), "qwen3-tiny-f32.ref")
	want := modeltest.PromptBatch(t, modeltest.WithKV(m, kv.F32), g.PromptIDs)
	for _, c := range []struct {
		typ   kv.Type
		tol   float64
		agree int
	}{{kv.F16, 3e-2, 64}, {kv.Q8_0, 0.3, 56}} {
		got := modeltest.PromptBatch(t, modeltest.WithKV(m, c.typ), g.PromptIDs)
		worst, agree := 0.0, 0
		for i := range got {
			worst = max(worst, modeltest.MaxAbs(got[i], want[i]))
			if sample.Argmax(got[i]) == sample.Argmax(want[i]) {
				agree++
			}
		}
		t.Logf("%s cache vs f32 cache: max |d logit| = %.3g, top-1 agrees at %d of %d positions", c.typ, worst, agree, len(got))
		if worst > c.tol || agree < c.agree {
			t.Errorf("%s cache vs f32 cache: max |d logit| = %.3g (tolerance %g), top-1 agrees at %d of %d positions (want %d)", c.typ, worst, c.tol, agree, len(got), c.agree)
		}
	}
}

// TestF32WeightsQ8KVAgainstReference: the float64 reference's logits
// with a q8_0 cache, as CheckQuantized compares a quantized model: RMS
// within 0.06 (measured 0.039, 0.045 with the AVX-512 tier's int8 dots
// of a quantized query; the f16 cache's max abs is 0.0083), the batched and token-by-token prompt identical, and every
// teacher-forced greedy token whose recorded margin exceeds 0.25.
func TestF32WeightsQ8KVAgainstReference(t *testing.T) {
	m := open(t, tiny(t, "models", "qwen3-tiny-f32.gguf"))
	g := modeltest.Load(t, tiny(t, "golden", "ref"), "qwen3-tiny-f32.ref")
	modeltest.CheckQuantized(t, modeltest.WithKV(m, kv.Q8_0), g, 0.06, 0.25)
}
