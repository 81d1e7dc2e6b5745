package sample

import (
	"fmt"
	"math"
	"slices"
)

// Limits vLLM puts on sampling parameters.
const (
	// GreedyEpsilon: a temperature below this is greedy decoding.
	GreedyEpsilon = 1e-5
	// MinTemperature: a positive temperature below this is raised to it,
	// because dividing logits by a tinier one overflows to inf/NaN.
	MinTemperature = 1e-2
	// MaxLogitBias bounds each logit_bias value, as the OpenAI API (and
	// vLLM's OpenAI layer) clamps them to [-100, 100].
	MaxLogitBias = 100
)

// Params are the sampling settings of one request. The HTTP layer maps
// request fields onto it; error messages use those request field names.
//
// The zero Params is not valid for NewSequence (top_p 0 and
// repetition_penalty 0 are errors in vLLM too): start from Defaults.
type Params struct {
	// Temperature below GreedyEpsilon means greedy (argmax, lowest id on
	// ties); (0, MinTemperature) is raised to MinTemperature.
	Temperature float64
	// TopP in (0, 1]; 1 turns nucleus filtering off.
	TopP float64
	// TopK keeps the k most likely tokens (and any tied with the k-th);
	// 0 or -1 turns it off.
	TopK int
	// MinP in [0, 1] drops tokens less likely than MinP times the most
	// likely one; 0 turns it off.
	MinP float64
	// PresencePenalty and FrequencyPenalty in [-2, 2] are subtracted from
	// the logits of tokens generated so far (once, or once per use).
	PresencePenalty  float64
	FrequencyPenalty float64
	// RepetitionPenalty > 0 divides the positive logits and multiplies
	// the others of tokens in the prompt or output; 1 turns it off.
	RepetitionPenalty float64
	// LogitBias is added to the logits of its token ids, each value
	// clamped to [-MaxLogitBias, MaxLogitBias].
	LogitBias map[int]float32
	// AllowedTokenIDs, if not nil, is the only tokens that may be
	// sampled; a non-nil empty list is an error, as in vLLM.
	AllowedTokenIDs []int
	// BadTokenIDs are never sampled (single-token bad words).
	BadTokenIDs []int
	// BadWords are token sequences never generated: the last token of
	// each is banned when the output ends with the rest, as vLLM does
	// with bad_words after tokenizing them. One-token entries act like
	// BadTokenIDs.
	BadWords [][]int
	// MinTokens masks StopTokenIDs and EOSTokenIDs until that many tokens
	// have been generated. vLLM masks the EOS ids even with ignore_eos.
	MinTokens    int
	StopTokenIDs []int
	EOSTokenIDs  []int
	// Seed seeds the request's generator when Seeded; otherwise the seed
	// is drawn from the server-wide generator. An OpenAI/vLLM int64 seed
	// maps with uint64(seed); vLLM reads seed -1 as no seed, so the HTTP
	// layer should leave Seeded false for it. For n > 1 choices vLLM
	// seeds choice i with seed+i (v1/engine/parallel_sampling.py).
	Seed   uint64
	Seeded bool
	// Logprobs asks for the sampled token's logprob and rank; TopLogprobs
	// for that many most likely tokens besides. They are the raw model
	// distribution (log_softmax of the logits before any processing),
	// vLLM's default logprobs_mode "raw_logprobs".
	Logprobs    bool
	TopLogprobs int
	// Constraint, if set, masks the tokens a grammar does not allow
	// before every other step, and is told each sampled token. A
	// constraint is stateful: each sequence needs its own.
	Constraint Constraint
}

// Constraint restricts the tokens of one sequence (structured outputs).
type Constraint interface {
	// Mask sets the logits of tokens that may not come next to -inf.
	Mask(logits []float32)
	// Accept advances past the sampled token; an error means the token
	// was not allowed.
	Accept(id int) error
}

// Defaults are vLLM's SamplingParams defaults: temperature 1, nothing
// filtered or penalised.
func Defaults() Params {
	return Params{Temperature: 1, TopP: 1, RepetitionPenalty: 1}
}

// ParamError is an invalid sampling parameter; Param is its request name,
// for the "param" field of an OpenAI error.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Msg }

func paramErr(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks p as vLLM's SamplingParams does. With vocabSize > 0 it
// also checks every token id against the vocabulary, which NewSequence
// cannot (Sample checks them against the first logits it sees); the HTTP
// layer can call it to reject a bad request before scheduling it.
func (p Params) Validate(vocabSize int) error {
	// The comparisons are written so that NaN fails them.
	switch {
	case math.IsInf(p.Temperature, 0):
		return paramErr("temperature", "temperature must be a finite number, got %v", p.Temperature)
	case !(p.Temperature >= 0):
		return paramErr("temperature", "temperature must be non-negative, got %v", p.Temperature)
	case !(p.TopP > 0 && p.TopP <= 1):
		return paramErr("top_p", "top_p must be in (0, 1], got %v", p.TopP)
	case p.TopK < -1:
		return paramErr("top_k", "top_k must be 0 (disable), or at least 1, got %d", p.TopK)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return paramErr("min_p", "min_p must be in [0, 1], got %v", p.MinP)
	case !(p.PresencePenalty >= -2 && p.PresencePenalty <= 2):
		return paramErr("presence_penalty", "presence_penalty must be in [-2, 2], got %v", p.PresencePenalty)
	case !(p.FrequencyPenalty >= -2 && p.FrequencyPenalty <= 2):
		return paramErr("frequency_penalty", "frequency_penalty must be in [-2, 2], got %v", p.FrequencyPenalty)
	case math.IsInf(p.RepetitionPenalty, 0):
		return paramErr("repetition_penalty", "repetition_penalty must be a finite number, got %v", p.RepetitionPenalty)
	case !(p.RepetitionPenalty > 0):
		return paramErr("repetition_penalty", "repetition_penalty must be greater than zero, got %v", p.RepetitionPenalty)
	case p.MinTokens < 0:
		return paramErr("min_tokens", "min_tokens must be greater than or equal to 0, got %d", p.MinTokens)
	case p.TopLogprobs < 0:
		return paramErr("top_logprobs", "top_logprobs must be non-negative, got %d", p.TopLogprobs)
	case p.TopLogprobs > 0 && !p.Logprobs:
		return paramErr("top_logprobs", "top_logprobs needs logprobs to be true")
	case p.AllowedTokenIDs != nil && len(p.AllowedTokenIDs) == 0:
		return paramErr("allowed_token_ids", "allowed_token_ids must not be empty")
	}
	for id, b := range p.LogitBias {
		if b != b {
			return paramErr("logit_bias", "logit_bias for token %d must be a number, got NaN", id)
		}
	}
	for _, w := range p.BadWords {
		if len(w) == 0 {
			return paramErr("bad_words", "bad_words cannot contain an empty entry")
		}
	}
	return p.checkIDs(vocabSize)
}

// checkIDs checks that token ids are >= 0 and, if vocab > 0, < vocab.
func (p Params) checkIDs(vocab int) error {
	bad := func(id int) bool { return id < 0 || (vocab > 0 && id >= vocab) }
	list := func(param string, ids []int) error {
		var out []int
		for _, id := range ids {
			if bad(id) {
				out = append(out, id)
			}
		}
		if out == nil {
			return nil
		}
		if vocab > 0 {
			return paramErr(param, "%s contains out-of-vocab token ids %v (vocabulary size %d)", param, out, vocab)
		}
		return paramErr(param, "%s contains negative token ids %v", param, out)
	}
	var biasIDs []int
	for id := range p.LogitBias {
		biasIDs = append(biasIDs, id)
	}
	slices.Sort(biasIDs) // for a stable message
	var badWordIDs []int
	for _, w := range p.BadWords {
		badWordIDs = append(badWordIDs, w...)
	}
	for _, c := range []struct {
		param string
		ids   []int
	}{
		{"logit_bias", biasIDs},
		{"allowed_token_ids", p.AllowedTokenIDs},
		{"bad_words", p.BadTokenIDs},
		{"bad_words", badWordIDs},
		{"stop_token_ids", p.StopTokenIDs},
		{"eos_token_id", p.EOSTokenIDs},
	} {
		if err := list(c.param, c.ids); err != nil {
			return err
		}
	}
	return nil
}
