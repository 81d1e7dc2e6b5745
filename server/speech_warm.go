package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// warmUpText is a short sentence: the warm-up runs what a client's
// first short request runs.
const warmUpText = "Hello there, how are you today?"

// warmUpRows is how many talker rows the warm-up's caches hold. A
// request takes spare caches only up to twice its own reservation
// (engine spares), so these are handed to any request that reserves at
// least half as many rows (a short sentence with a few frames), and a
// short sentence's prompt and first frames fit in them without growing.
const warmUpRows = 64

// WarmUp speaks the first audio chunk of a sentence before the first
// client does, outside the metrics: the first request of a process no
// longer pays for its memory's first touch (its talker caches and codec
// stream are kept for the next request; engine spares) or for first-use
// allocations. Its conditioning is cached under a salt no client
// request has.
func (s *Speech) WarmUp(ctx context.Context) error {
	voices := s.m.Cfg.SupportedSpeakers()
	if len(voices) == 0 {
		return nil
	}
	ids, _ := s.speechIDs(warmUpText, "")
	u := s.m.Cfg.NewRequest(ids, qwen3tts.Voice{Speaker: voices[0], NonStreaming: true})
	p, err := s.m.Cfg.BuildPrompt(ids, u.Voice)
	if err != nil {
		return fmt.Errorf("speech warm-up: %w", err)
	}
	// Frames enough that the caches are bounded at warmUpRows; the
	// warm-up ends at its first audio.
	u.MaxFrames = max(1, min(warmUpRows, s.m.Cfg.Talker.ContextLength)-len(p.Text)-1)
	u.Seed, u.Seeded = 1, true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.eng.Submit(ctx, engine.Request{Prompt: u.IDs, MaxTokens: u.MaxFrames + 1, Params: &engine.Speech{Utterance: u}, CacheSalt: "siskin warm-up"})
	if err != nil {
		return fmt.Errorf("speech warm-up: %w", err)
	}
	heard := false
	for ev := range ch { // closed once the stages have released it
		if ev.Err != nil && !(heard && errors.Is(ev.Err, context.Canceled)) {
			return fmt.Errorf("speech warm-up: %w", ev.Err)
		}
		if _, audio := ev.Data.([]float32); audio && !heard {
			heard = true
			cancel()
		}
	}
	return nil
}
