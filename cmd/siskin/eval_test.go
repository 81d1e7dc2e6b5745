package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

type evalJSON struct {
	Model                  string  `json:"model"`
	Reference              string  `json:"reference"`
	WeightPath             string  `json:"weight_path"`
	Prompts                int     `json:"prompts"`
	NewTokens              int     `json:"new_tokens"`
	Positions              int     `json:"positions"`
	Top1Matches            int     `json:"top1_matches"`
	Top1Agreement          float64 `json:"top1_agreement"`
	MeanKL                 float64 `json:"mean_kl"`
	MaxKL                  float64 `json:"max_kl"`
	MeanTokensToDivergence float64 `json:"mean_tokens_to_divergence"`
	FullMatches            int     `json:"full_matches"`
	PerPrompt              []struct {
		Prompt             string  `json:"prompt"`
		PromptTokens       int     `json:"prompt_tokens"`
		Positions          int     `json:"positions"`
		Top1Matches        int     `json:"top1_matches"`
		Top1Agreement      float64 `json:"top1_agreement"`
		MeanKL             float64 `json:"mean_kl"`
		TokensToDivergence int     `json:"tokens_to_divergence"`
		FullMatch          bool    `json:"full_match"`
		ReferenceTokens    []int   `json:"reference_tokens"`
	} `json:"per_prompt"`
}

const evalPrompts, evalTokens = 3, 8

func evalPromptFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "prompts.txt")
	text := "The capital of France is\n\nOnce upon a time, in a small village by the sea,\r\ndef fibonacci(n):\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runEval(t *testing.T, prompts, model, ref string) evalJSON {
	t.Helper()
	out, err := siskin(t, "eval", "-m", model, "--reference", ref, "--prompts", prompts, "-n", "8", "-t", "2", "--json")
	if err != nil {
		t.Fatalf("%s vs %s: %v", model, ref, err)
	}
	var r evalJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Model != model || r.Reference != ref || r.WeightPath != "gguf" || r.Prompts != evalPrompts || r.NewTokens != evalTokens ||
		r.Positions != evalPrompts*evalTokens || len(r.PerPrompt) != evalPrompts {
		t.Fatalf("%s vs %s: summary %s", model, ref, out)
	}
	matches, full := 0, 0
	for _, p := range r.PerPrompt {
		if p.Prompt == "" || p.PromptTokens < 1 || p.Positions != evalTokens || len(p.ReferenceTokens) != evalTokens ||
			p.TokensToDivergence < 0 || p.TokensToDivergence > evalTokens || p.FullMatch != (p.TokensToDivergence == evalTokens) ||
			p.Top1Matches < p.TokensToDivergence || !(p.MeanKL >= 0) {
			t.Errorf("%s: prompt %+v", model, p)
		}
		matches += p.Top1Matches
		if p.FullMatch {
			full++
		}
	}
	if r.PerPrompt[2].Prompt != "def fibonacci(n):" {
		t.Errorf("prompts read from the file: %+v", r.PerPrompt)
	}
	if matches != r.Top1Matches || full != r.FullMatches || r.Top1Agreement != float64(matches)/float64(r.Positions) {
		t.Errorf("%s: totals disagree with the rows: %s", model, out)
	}
	return r
}

func TestEvalSparkQuantsAgainstF32(t *testing.T) {
	models := func(name string) string { return testdata.Path(t, "llm", "tiny", "models", name) }
	prompts := evalPromptFile(t)
	f32 := models("spark2_5-tiny-f32.gguf")
	self := runEval(t, prompts, f32, f32)
	if self.Top1Agreement != 1 || self.MeanKL > 1e-12 || self.MaxKL > 1e-12 || self.FullMatches != evalPrompts || self.MeanTokensToDivergence != evalTokens {
		t.Errorf("f32 against itself: %+v", self)
	}
	q8 := runEval(t, prompts, models("spark2_5-tiny-q8_0.gguf"), f32)
	q4 := runEval(t, prompts, models("spark2_5-tiny-q4_k_m.gguf"), f32)
	t.Logf("q8_0: top-1 %.3f KL %.4g div %.2f; q4_k_m: top-1 %.3f KL %.4g div %.2f",
		q8.Top1Agreement, q8.MeanKL, q8.MeanTokensToDivergence, q4.Top1Agreement, q4.MeanKL, q4.MeanTokensToDivergence)
	if q8.Top1Agreement < q4.Top1Agreement || q8.MeanKL > q4.MeanKL {
		t.Errorf("q8_0 (top-1 %v, KL %v) follows f32 less closely than q4_k_m (top-1 %v, KL %v)",
			q8.Top1Agreement, q8.MeanKL, q4.Top1Agreement, q4.MeanKL)
	}
	if !(q4.MeanKL > 0) || q4.Top1Agreement == 1 {
		t.Errorf("q4_k_m should differ measurably from f32: %+v", q4)
	}
}

func TestEvalQwen3Q4KMAgainstF32(t *testing.T) {
	models := func(name string) string { return testdata.Path(t, "llm", "tiny", "models", name) }
	r := runEval(t, evalPromptFile(t), models("qwen3-tiny-q4_k_m.gguf"), models("qwen3-tiny-f32.gguf"))
	t.Logf("qwen3 q4_k_m: top-1 %.3f KL %.4g div %.2f", r.Top1Agreement, r.MeanKL, r.MeanTokensToDivergence)
	if !(r.MeanKL > 0) || r.Top1Agreement <= 0 {
		t.Errorf("%+v", r)
	}
}

func TestEvalTable(t *testing.T) {
	f32 := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	out, err := siskin(t, "eval", "-m", f32, "--reference", f32, "--prompts", evalPromptFile(t), "-n", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"|   3 | def fibonacci(n):", "| all ", "top-1 agreement 100.00% (6/6)", "3/3 prompts match fully"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	models := func(name string) string { return testdata.Path(t, "llm", "tiny", "models", name) }
	spark, qwen := models("spark2_5-tiny-f32.gguf"), models("qwen3-tiny-q4_k_m.gguf")
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte("\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"eval", "--reference", spark}, []string{"-m MODEL is required"}},
		{[]string{"eval", "-m", spark}, []string{"--reference REF is required"}},
		{[]string{"eval", "-m", spark, "--reference", spark, "-n", "0"}, []string{"-n must be at least 1"}},
		{[]string{"eval", "-m", qwen, "--reference", spark}, []string{qwen, spark, "architectures differ"}},
		{[]string{"eval", "-m", spark, "--reference", spark, "--weight-path", "w5a5"}, []string{spark, `unknown weight path "w5a5"`}},
		{[]string{"eval", "-m", spark, "--reference", "/nonexistent/ref.gguf"}, []string{"/nonexistent/ref.gguf"}},
		{[]string{"eval", "-m", spark, "--reference", spark, "--prompts", "/nonexistent/prompts.txt"}, []string{"/nonexistent/prompts.txt"}},
		{[]string{"eval", "-m", spark, "--reference", spark, "--prompts", empty}, []string{empty, "no prompts"}},
	} {
		_, err := siskin(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to say %q", c.args, err, w)
			}
		}
	}
}

// A weight path under eval: the F32 model converted to w8a8 follows F32
// closely, w4a8 less closely, on the same prompts.
func TestEvalWeightPaths(t *testing.T) {
	f32 := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	prompts := evalPromptFile(t)
	run := func(path string) evalJSON {
		out, err := siskin(t, "eval", "-m", f32, "--reference", f32, "--prompts", prompts, "-n", "8", "-t", "2", "--weight-path", path, "--json")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var r evalJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if r.WeightPath != path {
			t.Errorf("weight_path %q, want %q", r.WeightPath, path)
		}
		return r
	}
	w8, w4 := run("w8a8"), run("w4a8")
	t.Logf("w8a8: top-1 %.3f KL %.4g; w4a8: top-1 %.3f KL %.4g", w8.Top1Agreement, w8.MeanKL, w4.Top1Agreement, w4.MeanKL)
	// 12 prompts x 32 tokens measured KL 0.014 (w8a8), 0.85 (w4a8).
	if w8.MeanKL > 0.1 || w8.Top1Agreement < 0.75 {
		t.Errorf("w8a8 strays from f32: %+v", w8)
	}
	if !(w4.MeanKL > w8.MeanKL) {
		t.Errorf("w4a8 (KL %v) follows f32 as closely as w8a8 (KL %v)", w4.MeanKL, w8.MeanKL)
	}
}
