package engine

import (
	"context"

	"github.com/siskin-ml/siskin/model"
)

// FinishReason says why generation stopped.
type FinishReason string

// Finish reasons, named as in the OpenAI API.
const (
	FinishStop   FinishReason = "stop"
	FinishLength FinishReason = "length"
)

// Generate runs one request on a private engine, calling emit with each
// new token as soon as it is chosen, and returns the generated ids and
// why generation stopped. It is the command line's path through the same
// scheduler the server uses.
func Generate(ctx context.Context, m model.Model, req Request, emit func(id int) error) ([]int, FinishReason, error) {
	e := New(m, Config{MaxNumSeqs: 1, KVCacheBytes: m.Config().KVBytes(len(req.Prompt) + req.MaxTokens)})
	defer e.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := e.Submit(ctx, req)
	if err != nil {
		return nil, "", err
	}
	var out []int
	for ev := range events {
		if ev.Err != nil {
			return out, ev.Finish, ev.Err
		}
		if ev.Finish == FinishStop {
			return out, ev.Finish, nil
		}
		out = append(out, ev.Token.ID)
		if emit != nil {
			if err := emit(ev.Token.ID); err != nil {
				return out, "", err
			}
		}
		if ev.Finish != "" {
			return out, ev.Finish, nil
		}
	}
	return out, FinishAbort, ctx.Err()
}
