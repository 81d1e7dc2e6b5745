// Package engine runs models: for now one sequence at a time (prefill
// the prompt as one batch, then decode token by token).
package engine

import (
	"context"
	"fmt"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/sample"
)

// Request is one generation.
type Request struct {
	Prompt    []int
	MaxTokens int
	Sampling  sample.Params
	// IgnoreEOS keeps generating past end-of-generation tokens.
	IgnoreEOS bool
	// IsEOG reports end-of-generation tokens; nil means none.
	IsEOG func(id int) bool
}

// FinishReason says why generation stopped.
type FinishReason string

// Finish reasons, named as in the OpenAI API.
const (
	FinishStop   FinishReason = "stop"
	FinishLength FinishReason = "length"
)

// Generate runs req on m, calling emit with each new token as soon as it
// is chosen. It returns the generated ids and why it stopped.
func Generate(ctx context.Context, m model.Model, req Request, emit func(id int) error) ([]int, FinishReason, error) {
	cfg := m.Config()
	if len(req.Prompt) == 0 {
		return nil, "", fmt.Errorf("empty prompt")
	}
	if cfg.ContextLength > 0 && len(req.Prompt)+req.MaxTokens > cfg.ContextLength {
		return nil, "", fmt.Errorf("prompt of %d tokens plus %d new tokens exceeds the context length %d", len(req.Prompt), req.MaxTokens, cfg.ContextLength)
	}
	cache := m.NewCache()
	s := sample.New(req.Sampling)
	logits, err := m.Forward(cache, req.Prompt, false)
	if err != nil {
		return nil, "", err
	}
	var out []int
	for len(out) < req.MaxTokens {
		if err := ctx.Err(); err != nil {
			return out, "", err
		}
		id := s.Next(logits)
		if !req.IgnoreEOS && req.IsEOG != nil && req.IsEOG(id) {
			return out, FinishStop, nil
		}
		out = append(out, id)
		if emit != nil {
			if err := emit(id); err != nil {
				return out, "", err
			}
		}
		if len(out) == req.MaxTokens {
			break
		}
		if logits, err = m.Forward(cache, []int{id}, false); err != nil {
			return out, "", err
		}
	}
	return out, FinishLength, nil
}
