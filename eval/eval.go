// Package eval measures how closely a model follows a reference copy of
// the same weights (for instance a quantized GGUF against its F32 file) on
// a set of prompts: top-1 agreement and KL divergence of the next-token
// distributions, teacher-forced on the reference's greedy continuation,
// and how many greedy tokens the two produce before they first differ.
//
// Both models run the way generation runs: the prompt as one batch, then
// one token per step. The reference chooses each next token by argmax
// (the lowest id on ties, as greedy sampling does) and both models are fed
// that same token, so while the model's argmax keeps matching, the model
// is computing exactly its own greedy continuation; the first position
// where its argmax differs is where the two greedy continuations diverge.
// End-of-generation tokens do not stop a continuation: every prompt is
// measured over exactly NewTokens positions.
package eval

import (
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

// DefaultPrompts is the built-in prompt set: short, varied English.
var DefaultPrompts = []string{
	"The capital of France is",
	"Once upon a time, in a small village by the sea,",
	"To make a cup of tea, first",
	"The three primary colors are",
	"def fibonacci(n):",
	"Water boils at a temperature of",
	"My favourite thing about autumn is",
	"The quick brown fox",
	"In 1969, astronauts landed on",
	"Here is a list of fruits: apple, banana,",
	"Dear Sir or Madam, I am writing to",
	"The most important rule of cooking rice is",
}

// Options controls Run.
type Options struct {
	NewTokens int // greedy tokens per prompt (the positions measured)
	// Progress, if set, is called after each prompt with its index.
	Progress func(i int, r PromptResult)
}

// PromptResult is one prompt's row of the report.
type PromptResult struct {
	Prompt       string `json:"prompt"`
	PromptTokens int    `json:"prompt_tokens"`
	// Positions measured: the predictions of the NewTokens continuation
	// tokens (the last prompt position and the continuation's first
	// NewTokens-1 positions).
	Positions     int     `json:"positions"`
	Top1Matches   int     `json:"top1_matches"`
	Top1Agreement float64 `json:"top1_agreement"`
	MeanKL        float64 `json:"mean_kl"`
	MaxKL         float64 `json:"max_kl"`
	// TokensToDivergence is how many greedy tokens the model produces
	// identically to the reference before the first that differs
	// (Positions if none does).
	TokensToDivergence int  `json:"tokens_to_divergence"`
	FullMatch          bool `json:"full_match"`
	// Reference is the reference's greedy continuation (token ids).
	Reference []int `json:"reference_tokens"`
}

// Report is the summary over every prompt.
type Report struct {
	Prompts   int `json:"prompts"`
	NewTokens int `json:"new_tokens"`
	Positions int `json:"positions"` // over all prompts
	// Top1Agreement and MeanKL pool every measured position.
	Top1Matches            int            `json:"top1_matches"`
	Top1Agreement          float64        `json:"top1_agreement"`
	MeanKL                 float64        `json:"mean_kl"`
	MaxKL                  float64        `json:"max_kl"`
	MeanTokensToDivergence float64        `json:"mean_tokens_to_divergence"`
	FullMatches            int            `json:"full_matches"`
	PerPrompt              []PromptResult `json:"per_prompt"`
}

// Compatible says why ref and m cannot be compared, or nil: they must
// share the architecture and the vocabulary (size and every piece).
func Compatible(ref, m model.Model, refTok, mTok *tokenizer.Tokenizer) error {
	rc, mc := ref.Config(), m.Config()
	if rc.Arch != mc.Arch {
		return fmt.Errorf("architectures differ: reference %q, model %q", rc.Arch, mc.Arch)
	}
	if rc.Vocab != mc.Vocab {
		return fmt.Errorf("vocabularies differ: reference %d logits, model %d", rc.Vocab, mc.Vocab)
	}
	if rv, mv := refTok.VocabSize(), mTok.VocabSize(); rv != mv {
		return fmt.Errorf("vocabularies differ: reference %d tokens, model %d", rv, mv)
	}
	for i := range refTok.VocabSize() {
		if a, b := refTok.Piece(i), mTok.Piece(i); a != b {
			return fmt.Errorf("vocabularies differ at token %d: reference %q, model %q", i, a, b)
		}
	}
	if refTok.BOS() != mTok.BOS() || refTok.AddBOS() != mTok.AddBOS() {
		return fmt.Errorf("tokenizers differ in their BOS handling")
	}
	return nil
}

// Tokenize encodes prompts as generation does (special tokens added, as
// a BOS where the tokenizer asks for one, and parsed in the text).
func Tokenize(tok *tokenizer.Tokenizer, texts []string) [][]int {
	out := make([][]int, len(texts))
	for i, s := range texts {
		out[i] = tok.Encode(s, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	}
	return out
}

// Run evaluates m against ref on each prompt (texts[i] tokenized as
// ids[i]; texts only label the rows).
func Run(ref, m model.Model, texts []string, ids [][]int, opt Options) (*Report, error) {
	if len(texts) != len(ids) {
		return nil, fmt.Errorf("%d prompt texts for %d tokenized prompts", len(texts), len(ids))
	}
	if opt.NewTokens < 1 {
		return nil, fmt.Errorf("new tokens must be at least 1, got %d", opt.NewTokens)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no prompts")
	}
	rep := &Report{Prompts: len(ids), NewTokens: opt.NewTokens}
	var klSum float64
	var divSum int
	for i := range ids {
		r, err := runOne(ref, m, ids[i], opt.NewTokens)
		if err != nil {
			return nil, fmt.Errorf("prompt %d (%q): %w", i+1, texts[i], err)
		}
		r.Prompt = texts[i]
		rep.PerPrompt = append(rep.PerPrompt, r)
		rep.Positions += r.Positions
		rep.Top1Matches += r.Top1Matches
		klSum += r.MeanKL * float64(r.Positions)
		rep.MaxKL = max(rep.MaxKL, r.MaxKL)
		divSum += r.TokensToDivergence
		if r.FullMatch {
			rep.FullMatches++
		}
		if opt.Progress != nil {
			opt.Progress(i, r)
		}
	}
	rep.Top1Agreement = float64(rep.Top1Matches) / float64(rep.Positions)
	rep.MeanKL = klSum / float64(rep.Positions)
	rep.MeanTokensToDivergence = float64(divSum) / float64(len(ids))
	return rep, nil
}

func runOne(ref, m model.Model, prompt []int, n int) (PromptResult, error) {
	r := PromptResult{PromptTokens: len(prompt), Positions: n}
	if len(prompt) == 0 {
		return r, fmt.Errorf("the prompt is empty after tokenization")
	}
	ctx := ref.Config().ContextLength
	if mc := m.Config().ContextLength; mc > 0 && (ctx <= 0 || mc < ctx) {
		ctx = mc
	}
	if ctx > 0 && len(prompt)+n > ctx {
		return r, fmt.Errorf("%d prompt tokens plus %d new tokens exceed the context length %d", len(prompt), n, ctx)
	}
	rc, mc := ref.NewCache(), m.NewCache()
	in := prompt
	var t tally
	for step := range n {
		lr, err := ref.Forward(rc, in, false)
		if err != nil {
			return r, fmt.Errorf("reference: %w", err)
		}
		lm, err := m.Forward(mc, in, false)
		if err != nil {
			return r, fmt.Errorf("model: %w", err)
		}
		next := t.add(lr, lm)
		r.Reference = append(r.Reference, next)
		if step < n-1 {
			in = []int{next}
		}
	}
	r.Top1Matches, r.TokensToDivergence = t.matches, t.firstMiss
	r.FullMatch = t.firstMiss == n
	r.Top1Agreement = float64(t.matches) / float64(n)
	r.MeanKL = t.klSum / float64(n)
	r.MaxKL = t.klMax
	return r, nil
}

// tally accumulates agreement over a prompt's positions in order.
type tally struct {
	n, matches   int
	firstMiss    int // positions before the first argmax mismatch
	missed       bool
	klSum, klMax float64
	lp, lq       []float64
}

// add scores one position (reference and model logits) and returns the
// reference's argmax, the token both are fed next.
func (t *tally) add(ref, m []float32) int {
	a, b := sample.Argmax(ref), sample.Argmax(m)
	if a == b {
		t.matches++
		if !t.missed {
			t.firstMiss++
		}
	} else {
		t.missed = true
	}
	t.lp = growF64(t.lp, len(ref))
	t.lq = growF64(t.lq, len(m))
	kl := klLog(LogSoftmax(t.lp, ref), LogSoftmax(t.lq, m))
	t.klSum += kl
	t.klMax = max(t.klMax, kl)
	t.n++
	return a
}

func growF64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// LogSoftmax writes log softmax(x) into dst (len(x)) in float64:
// (x_i - max) - log sum exp(x_j - max), so no exponent overflows and a
// shift of every logit changes nothing.
func LogSoftmax(dst []float64, x []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	ls := math.Log(s)
	for i, v := range x {
		dst[i] = (float64(v) - mx) - ls // the difference is exact
	}
	return dst
}

// KL is KL(P || Q) = sum_i p_i (log p_i - log q_i) of the softmax
// distributions of logits p and q, in float64.
func KL(p, q []float32) float64 {
	return klLog(LogSoftmax(make([]float64, len(p)), p), LogSoftmax(make([]float64, len(q)), q))
}

// klLog is KL(P || Q) from log-probabilities. Terms where p underflows to
// zero contribute nothing (the limit of p log p); the sum is clamped at
// zero against rounding.
func klLog(lp, lq []float64) float64 {
	var s float64
	for i, l := range lp {
		p := math.Exp(l)
		if p == 0 {
			continue
		}
		s += p * (l - lq[i])
	}
	return max(s, 0)
}
