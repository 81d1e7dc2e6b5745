package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// warmUpText is long enough that the warm-up's talker cache grows to
// the size of a sentence's prompt (a few dozen rows), which later
// requests then prefill into without growing it.
var warmUpText = strings.Repeat("Hello there, how are you today? ", 6)

// WarmUp speaks one frame of a sentence before the first client does,
// outside the metrics: the first request of a process no longer pays for
// its memory's first touch (its talker caches and codec stream are kept
// for the next request; engine spares) or for first-use allocations.
// Its conditioning is cached under a salt no client request has.
func (s *Speech) WarmUp(ctx context.Context) error {
	voices := s.m.Cfg.SupportedSpeakers()
	if len(voices) == 0 {
		return nil
	}
	ids, _ := s.speechIDs(warmUpText, "")
	u := s.m.Cfg.NewRequest(ids, qwen3tts.Voice{Speaker: voices[0], NonStreaming: true})
	u.MaxFrames, u.Seed, u.Seeded = 1, 1, true
	ch, err := s.eng.Submit(ctx, engine.Request{Prompt: u.IDs, MaxTokens: 1, Params: &engine.Speech{Utterance: u}, CacheSalt: "siskin warm-up"})
	if err != nil {
		return fmt.Errorf("speech warm-up: %w", err)
	}
	for ev := range ch {
		if ev.Err != nil {
			return fmt.Errorf("speech warm-up: %w", ev.Err)
		}
	}
	return nil
}
