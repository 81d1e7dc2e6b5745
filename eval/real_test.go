package eval

import (
	"context"
	"math"
	"testing"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
)

// The lockstep run must agree with the two independent ways of getting
// the same figures: greedy generation through the engine (for the
// continuations and where they diverge) and one all-logits forward pass
// over prompt + continuation (for top-1 and KL).
func TestRunMatchesGreedyGenerationAndBatchedTeacherForcing(t *testing.T) {
	dir := []string{"llm", "tiny", "models"}
	ref, err := load.Open(testdata.Path(t, append(dir, "spark2_5-tiny-f32.gguf")...))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	m, err := load.Open(testdata.Path(t, append(dir, "spark2_5-tiny-q4_k_m.gguf")...))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := Compatible(ref.Model, m.Model, ref.Tokenizer, m.Tokenizer); err != nil {
		t.Fatal(err)
	}
	const n = 8
	texts := DefaultPrompts[:3]
	ids := Tokenize(ref.Tokenizer, texts)
	rep, err := Run(ref.Model, m.Model, texts, ids, Options{NewTokens: n})
	if err != nil {
		t.Fatal(err)
	}
	greedy := func(mm model.Model, prompt []int) []int {
		sp := sample.Defaults()
		sp.Temperature = 0
		seq, err := sample.NewSequence(sp, prompt)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := engine.Generate(context.Background(), mm, engine.Request{Prompt: prompt, MaxTokens: n, Sampler: seq}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i, r := range rep.PerPrompt {
		gr, gm := greedy(ref.Model, ids[i]), greedy(m.Model, ids[i])
		if !equal(gr, r.Reference) {
			t.Errorf("prompt %d: reference continuation %v, engine greedy %v", i, r.Reference, gr)
		}
		div := 0
		for div < n && gr[div] == gm[div] {
			div++
		}
		if div != r.TokensToDivergence {
			t.Errorf("prompt %d: tokens to divergence %d, engine greedy runs diverge after %d (%v vs %v)", i, r.TokensToDivergence, div, gr, gm)
		}
		seq := append(append([]int{}, ids[i]...), r.Reference[:n-1]...)
		lr, err := model.Forward(ref.Model, ref.Model.NewCache(), seq, true)
		if err != nil {
			t.Fatal(err)
		}
		lm, err := model.Forward(m.Model, m.Model.NewCache(), seq, true)
		if err != nil {
			t.Fatal(err)
		}
		v := ref.Model.Config().Vocab
		matches, kl := 0, 0.0
		for p := len(ids[i]) - 1; p < len(seq); p++ {
			a, b := lr[p*v:(p+1)*v], lm[p*v:(p+1)*v]
			if sample.Argmax(a) == sample.Argmax(b) {
				matches++
			}
			kl += KL(a, b)
		}
		if matches != r.Top1Matches || math.Abs(kl/n-r.MeanKL) > 1e-9 {
			t.Errorf("prompt %d: batched teacher forcing gives %d matches, mean KL %v; the run %d, %v", i, matches, kl/n, r.Top1Matches, r.MeanKL)
		}
	}
}
