package main

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/siskin-ml/siskin/model"
)

// limitHeap sets a soft limit above the live heap plus what the engine
// may hold, and leaves a limit given by GOMEMLIMIT alone.
func TestLimitHeap(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const engine = 1 << 30
	limitHeap(engine, log)
	if got := debug.SetMemoryLimit(-1); got < engine*5/4 || got > engine*2 {
		t.Errorf("limit %d, want between 1.25x and 2x the engine's %d bytes", got, engine)
	}
	debug.SetMemoryLimit(old)
	t.Setenv("GOMEMLIMIT", "1GiB")
	limitHeap(engine, log)
	if got := debug.SetMemoryLimit(-1); got != old {
		t.Errorf("with GOMEMLIMIT set the limit became %d, want it left at %d", got, old)
	}
}

// The engine's share counts the KV budget, a step's activations and two
// sets of logits: Qwen3-1.7B's shape, 512 batched tokens, 8 sequences.
func TestLLMHeapBytes(t *testing.T) {
	c := &model.Config{Hidden: 2048, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 6144, Vocab: 151936}
	perToken := int64(3*2048 + 2*2048 + 2*1024 + 2*6144)
	want := int64(300<<20) + 4*512*perToken + 2*4*8*151936
	if got := llmHeapBytes(c, 300<<20, 512, 8); got != want {
		t.Errorf("llmHeapBytes = %d, want %d", got, want)
	}
	if got := llmHeapBytes(c, 300<<20, 0, 8); got != want {
		t.Errorf("with the default batched tokens: %d, want %d", got, want)
	}
}
