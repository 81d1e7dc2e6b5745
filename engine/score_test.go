package engine

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/siskin-ml/siskin/internal/modeltest"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
)

// A scored prompt's logprobs are log_softmax of llama2.c's logits (run.c,
// float32, its first four positions recorded): stories260K's GGUF at
// float32 with a float32 cache, as run.c keeps. Tolerance 2e-4: the
// logits agree within 1e-4 (model/llama's test of them), and a logprob
// moves by at most twice a logit's error.
func TestScorePromptAgainstLlama2c(t *testing.T) {
	l, err := load.Open(testdata.Path(t, "llm", "stories260K-gguf", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	m := modeltest.WithKV(l.Model, kv.F32)
	raw, err := os.ReadFile(testdata.Path(t, "llm", "stories260K-llama2c", "golden", "greedy_prompt1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Tokens []int       `json:"tokens"`
		Logits [][]float32 `json:"logits_first_positions"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	e := New(m, Config{})
	defer e.Close()
	p := g.Tokens[:len(g.Logits)+1]
	ch, err := e.Submit(context.Background(), Request{Prompt: p, ScorePrompt: true, PromptTop: 3})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, ch)
	if len(evs) != 1 || evs[0].Finish != FinishLength || evs[0].Token.ID != NoToken {
		t.Fatalf("events %+v, want one that ends with no token", evs)
	}
	scored := evs[0].Prompt
	if len(scored) != len(p)-1 {
		t.Fatalf("%d prompt tokens scored, want %d", len(scored), len(p)-1)
	}
	for pos, row := range g.Logits {
		want := logSoftmax(row)
		s := scored[pos]
		if s.ID != p[pos+1] || math.Abs(float64(s.Logprob)-want[s.ID]) > 2e-4 {
			t.Errorf("position %d: token %d logprob %v, want token %d %v", pos, s.ID, s.Logprob, p[pos+1], want[p[pos+1]])
		}
		if len(s.Top) != 3 || math.Abs(float64(s.Top[0].Logprob)-want[s.Top[0].ID]) > 2e-4 || s.Top[0].Logprob < s.Top[2].Logprob {
			t.Errorf("position %d: top %+v", pos, s.Top)
		}
	}
}

// A long prompt is scored in chunks, beside other requests, and takes no
// prefix-cache hit where the same request unscored does (the prompt
// repeats an earlier turn and its answer, as in TestPrefixCache); the
// generation that follows is the unscored request's. The scores equal
// those of one forward pass over the whole prompt: the tier's results are
// the same bits in a batch of any size (a check of the chunking, not of
// the model).
func TestScorePromptChunks(t *testing.T) {
	m := tinySpark(t)
	e := New(m, Config{})
	defer e.Close()
	p1 := prompt(3*scoreChunk+5, 2)
	ch, err := e.Submit(context.Background(), Request{Prompt: p1, MaxTokens: 20, Sampler: sampler(t, 0, 0, p1)})
	if err != nil {
		t.Fatal(err)
	}
	turn, _ := collect(t, ch)
	p := append([]int(nil), p1...)
	for _, tk := range turn {
		p = append(p, tk.ID)
	}
	p = append(p, prompt(9, 7)...)
	plainCh, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 6, Sampler: sampler(t, 0, 0, p)})
	if err != nil {
		t.Fatal(err)
	}
	plainEvs := events(t, plainCh)
	if plainEvs[0].CachedTokens == 0 {
		t.Fatal("the unscored request found nothing in the prefix cache: the test proves nothing")
	}
	other, err := e.Submit(context.Background(), Request{Prompt: prompt(50, 3), MaxTokens: 30, Sampler: sampler(t, 0.8, 1, prompt(50, 3))})
	if err != nil {
		t.Fatal(err)
	}
	ch, err = e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 6, Sampler: sampler(t, 0, 0, p), ScorePrompt: true, PromptTop: 2})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, ch)
	collect(t, other)
	if len(evs) != len(plainEvs) || evs[0].CachedTokens != 0 || len(evs[0].Prompt) != len(p)-1 || evs[1].Prompt != nil {
		t.Fatalf("%d events, first: cached %d, %d scored", len(evs), evs[0].CachedTokens, len(evs[0].Prompt))
	}
	plain := make([]sample.Token, len(plainEvs))
	for i, ev := range plainEvs {
		plain[i] = ev.Token
	}
	for i, ev := range evs {
		if ev.Token.ID != plain[i].ID {
			t.Errorf("token %d is %d, unscored %d", i, ev.Token.ID, plain[i].ID)
		}
	}
	logits, err := model.Forward(m, m.NewCache(), p, true)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Config().Vocab
	for pos, s := range evs[0].Prompt {
		want := sample.Score(logits[pos*v:(pos+1)*v], p[pos+1], 2)
		if s.ID != want.ID || s.Logprob != want.Logprob || s.Rank != want.Rank || len(s.Top) != 2 || s.Top[1] != want.Top[1] {
			t.Fatalf("position %d: %+v, one pass gives %+v", pos, s, want)
		}
	}
}

// events is every event of a request until its last.
func events(t testing.TB, ch <-chan Event) []Event {
	t.Helper()
	var out []Event
	for ev := range ch {
		if ev.Err != nil {
			t.Fatalf("request failed: %v", ev.Err)
		}
		out = append(out, ev)
		if ev.Finish != "" {
			return out
		}
	}
	t.Fatal("stream closed without a finish reason")
	return nil
}

func logSoftmax(row []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, float64(v))
	}
	sum := 0.0
	for _, v := range row {
		sum += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = float64(v) - m - math.Log(sum)
	}
	return out
}
