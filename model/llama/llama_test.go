package llama

import (
	"encoding/json"
	"os"
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

// llama2.c's run.c recorded the logits of the first positions of each
// prompt for stories260K (F32 weights, the same values as the GGUF file).
// Tolerance 1e-4 max abs, with a float32 KV cache as run.c keeps.
func TestStories260KLogitsAgainstLlama2c(t *testing.T) {
	m := open(t, testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf"))
	modeltest.WithKV(m, kv.F32)
	for i := 0; i < 4; i++ {
		p := testdata.Path(t, "llm", "stories260K-llama2c", "golden", "greedy_prompt"+string(rune('0'+i))+".json")
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			PromptTokens []int       `json:"prompt_tokens"`
			Tokens       []int       `json:"tokens"`
			Logits       [][]float32 `json:"logits_first_positions"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			t.Fatal(err)
		}
		if len(g.Logits) == 0 {
			t.Fatalf("%s: no logits recorded", p)
		}
		// run.c feeds the recorded token sequence one token at a time.
		c := m.NewCache()
		for pos := range g.Logits {
			logits, err := m.Forward(c, []int{g.Tokens[pos]}, false)
			if err != nil {
				t.Fatal(err)
			}
			if d := modeltest.MaxAbs(logits, g.Logits[pos]); d > 1e-4 {
				t.Errorf("%s: position %d logits differ by %.3g", p, pos, d)
			}
		}
		// And the whole recorded greedy sequence is reproduced.
		np := len(g.PromptTokens)
		ids, _ := modeltest.Greedy(t, m, g.Tokens[:np], len(g.Tokens)-np)
		for j, id := range ids {
			if id != g.Tokens[np+j] {
				t.Errorf("%s: greedy token %d is %d, want %d", p, j, id, g.Tokens[np+j])
				break
			}
		}
	}
}

func TestTinyQ4KMAgainstLlamaCpp(t *testing.T) {
	m := open(t, testdata.Path(t, "llm", "tiny", "models", "llama-tiny-q4_k_m.gguf"))
	g := modeltest.Load(t, testdata.Path(t, "llm", "tiny", "golden", "llamacpp"), "llama-tiny-q4_k_m")
	modeltest.CheckQuantized(t, modeltest.WithKV(m, kv.F32), g, 0.25, 0.5) // llama.cpp ran an F32 KV cache
}

func BenchmarkForward(b *testing.B) {
	for _, p := range [][]string{{"stories260K-gguf", "stories260K.gguf"}, {"tiny", "models", "llama-tiny-q4_k_m.gguf"}} {
		b.Run(p[len(p)-1], func(b *testing.B) {
			m := open(b, testdata.Path(b, append([]string{"llm"}, p...)...))
			b.Run("decode", func(b *testing.B) { modeltest.BenchDecode(b, m) })
			b.Run("prefill64", func(b *testing.B) { modeltest.BenchPrefill(b, m) })
		})
	}
}

func TestBatchInvariance(t *testing.T) {
	m := open(t, testdata.Path(t, "llm", "tiny", "models", "llama-tiny-q4_k_m.gguf"))
	g := modeltest.Load(t, testdata.Path(t, "llm", "tiny", "golden", "llamacpp"), "llama-tiny-q4_k_m")
	modeltest.CheckBatchInvariance(t, m, g.PromptIDs)
}

func TestStepAllocs(t *testing.T) {
	m := open(t, testdata.Path(t, "llm", "tiny", "models", "llama-tiny-q4_k_m.gguf"))
	g := modeltest.Load(t, testdata.Path(t, "llm", "tiny", "golden", "llamacpp"), "llama-tiny-q4_k_m")
	modeltest.CheckStepAllocs(t, m, g.PromptIDs)
}
