package engine

import (
	"encoding/binary"
	"time"

	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// condCache keeps the talker KV of conditioning prefixes (speaker,
// language and instructions rows) by key, least recently used out first.
// It lives in what reservations leave of the byte budget: Start evicts to
// that room once the new request's reservation is made, so a cached
// conditioning never keeps a request waiting. A request that hits it
// copies the rows into its own cache, so its reservation is the same as
// without the cache. Only the engine loop touches it.
type condCache struct {
	entries map[string]*condEntry
	bytes   int64
	tick    int64
	max     int // entries
}

type condEntry struct {
	cond    *qwen3tts.Conditioning
	lastUse int64
}

// maxConditionings bounds the cache's entries besides its bytes: a
// server has a few voices, each with a few instructions in use.
const maxConditionings = 64

func newCondCache() *condCache {
	return &condCache{entries: map[string]*condEntry{}, max: maxConditionings}
}

// condKey is the conditioning salt of a prompt: the request's cache salt
// and the tracks of its conditioning rows, which are a function of the
// model's ids for the voice, language and instructions (the engine
// serves one model).
func condKey(salt string, p *qwen3tts.Prompt) string {
	b := make([]byte, 0, len(salt)+1+8*p.Cond)
	b = append(append(b, salt...), 0)
	for i := range p.Cond {
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Text[i]))
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Codec[i]))
	}
	return string(b)
}

// get returns the conditioning of key, or nil.
func (c *condCache) get(key string) *qwen3tts.Conditioning {
	e, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.tick++
	e.lastUse = c.tick
	return e.cond
}

// put keeps cond under key if it fits room (evicting older entries).
func (c *condCache) put(key string, cond *qwen3tts.Conditioning, room int64) {
	if _, ok := c.entries[key]; ok || cond.Bytes() > room {
		return
	}
	c.evict(room-cond.Bytes(), c.max-1)
	if c.bytes+cond.Bytes() > room {
		return
	}
	c.tick++
	c.entries[key] = &condEntry{cond: cond, lastUse: c.tick}
	c.bytes += cond.Bytes()
}

// evict drops the least recently used entries until at most limit bytes
// and n entries remain.
func (c *condCache) evict(limit int64, n int) {
	for c.bytes > limit || len(c.entries) > max(n, 0) {
		var victim string
		var old *condEntry
		for k, e := range c.entries {
			if old == nil || e.lastUse < old.lastUse {
				victim, old = k, e
			}
		}
		if old == nil {
			return
		}
		delete(c.entries, victim)
		c.bytes -= old.cond.Bytes()
	}
}

// talkerItem is an utterance in the talker stage.
type talkerItem struct {
	u      *qwen3tts.Utterance
	key    string // conditioning salt
	stored bool   // its conditioning is in the cache
	stats  *qwen3tts.Stats
	last   qwen3tts.Stats // stats before this step
}

// splitStep is a stage that reports its step's time by part.
type splitStep interface {
	stepParts(report func(part string, d time.Duration))
}

// stepParts reports the last step's talker, predictor and sampler time:
// the model charges each utterance a batched pass's whole time, so the
// largest charge over the batch is the pass's time.
func (t *talkerStage) stepParts(report func(string, time.Duration)) {
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"talker", t.parts.Prefill + t.parts.Talker}, {"predictor", t.parts.Predictor}, {"sampler", t.parts.Sampler}} {
		if p.d > 0 {
			report(p.name, p.d)
		}
	}
}

// account adds each item's share of the step to t.parts.
func (t *talkerStage) account(batch []*Item) {
	t.parts = qwen3tts.Stats{}
	for _, it := range batch {
		ti, ok := it.State.(*talkerItem)
		if !ok {
			continue
		}
		now := *ti.stats
		t.parts.Prefill = max(t.parts.Prefill, now.Prefill-ti.last.Prefill)
		t.parts.Talker = max(t.parts.Talker, now.Talker-ti.last.Talker)
		t.parts.Predictor = max(t.parts.Predictor, now.Predictor-ti.last.Predictor)
		t.parts.Sampler = max(t.parts.Sampler, now.Sampler-ti.last.Sampler)
		ti.last = now
	}
}

// store caches the conditionings of utterances whose prompts have run.
// Step calls it before its next pass, and Release before it frees the
// caches, not right after the prefill: the copy (megabytes of new
// memory) would delay the first audio, which the codec makes in
// between.
func (t *talkerStage) store(items ...*Item) {
	room := t.room() - t.spare.bytes
	for _, it := range items {
		ti, ok := it.State.(*talkerItem)
		if !ok || ti.stored {
			continue
		}
		if c := ti.u.Conditioning(); c != nil {
			t.cache.put(ti.key, c, room)
			ti.stored = true
		}
	}
	t.e.stats.prefixBytes.Store(t.cache.bytes)
}

// room is what reservations leave of the budget for the cache.
func (t *talkerStage) room() int64 { return t.e.cfg.KVCacheBytes - t.e.used }
