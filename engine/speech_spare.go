package engine

import (
	"math"
	"slices"

	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// spares keeps the memory of ended utterances, their talker and
// predictor caches and their codec streams, for the next ones: an
// utterance in fresh memory pays for the first touch of its pages and
// for its caches' growth in its first steps, which is time to first
// audio. Like the conditioning cache, spares live in what reservations
// leave of the budget, and give way first when a new reservation needs
// the room. Only the engine loop touches them.
type spares struct {
	e       *Engine
	cond    *condCache
	mems    []*qwen3tts.Memory
	streams []*codec.Stream
	bytes   int64
}

// add counts d more bytes of spares, here and in the engine's Stats.
func (sp *spares) add(d int64) {
	sp.bytes += d
	sp.e.stats.spareBytes.Add(d)
}

// room is what reservations and the conditioning cache leave for spares.
func (sp *spares) room() int64 {
	return sp.e.cfg.KVCacheBytes - sp.e.used - sp.cond.bytes
}

// shrink drops spares, the largest first, until they fit limit bytes.
func (sp *spares) shrink(limit int64) {
	for sp.bytes > limit && len(sp.mems)+len(sp.streams) > 0 {
		mi := largest(sp.mems, (*qwen3tts.Memory).Bytes)
		si := largest(sp.streams, (*codec.Stream).Bytes)
		if si < 0 || mi >= 0 && sp.mems[mi].Bytes() >= sp.streams[si].Bytes() {
			sp.add(-sp.mems[mi].Bytes())
			sp.mems = slices.Delete(sp.mems, mi, mi+1)
			continue
		}
		sp.add(-sp.streams[si].Bytes())
		sp.streams = slices.Delete(sp.streams, si, si+1)
	}
}

// largest is the index of the largest of xs by size, or -1.
func largest[T any](xs []T, size func(T) int64) int {
	return largestWithin(xs, size, math.MaxInt64)
}

// largestWithin is the index of the largest of xs by size among those
// of at most limit, or -1.
func largestWithin[T any](xs []T, size func(T) int64, limit int64) int {
	at := -1
	for i, x := range xs {
		if size(x) <= limit && (at < 0 || size(x) > size(xs[at])) {
			at = i
		}
	}
	return at
}

// putMemory keeps an ended utterance's caches if they fit the room and
// the bound on entries.
func (sp *spares) putMemory(mem *qwen3tts.Memory) {
	if mem != nil && len(sp.mems) < sp.e.cfg.MaxNumSeqs && sp.bytes+mem.Bytes() <= sp.room() {
		sp.mems = append(sp.mems, mem)
		sp.add(mem.Bytes())
	}
}

// takeMemory returns the largest spare caches of at most limit bytes,
// or nil.
func (sp *spares) takeMemory(limit int64) *qwen3tts.Memory {
	at := largestWithin(sp.mems, (*qwen3tts.Memory).Bytes, limit)
	if at < 0 {
		return nil
	}
	mem := sp.mems[at]
	sp.mems = slices.Delete(sp.mems, at, at+1)
	sp.add(-mem.Bytes())
	return mem
}

// putStream resets an ended utterance's codec stream (here, not when the
// next utterance waits for it) and keeps it if it fits.
func (sp *spares) putStream(s *codec.Stream) {
	if s != nil && len(sp.streams) < sp.e.cfg.MaxNumSeqs && sp.bytes+s.Bytes() <= sp.room() {
		s.Reset()
		sp.streams = append(sp.streams, s)
		sp.add(s.Bytes())
	}
}

// takeStream returns a spare codec stream at frame 0, or nil.
func (sp *spares) takeStream() *codec.Stream {
	n := len(sp.streams)
	if n == 0 {
		return nil
	}
	s := sp.streams[n-1]
	sp.streams = slices.Delete(sp.streams, n-1, n)
	sp.add(-s.Bytes())
	return s
}
