package qwen3tts

import "github.com/siskin-ml/siskin/kv"

// Memory is the talker and code predictor caches of an utterance that
// has ended, kept by a scheduler for a later one (BeginWith): an
// utterance in fresh caches pays for their growth and for the first
// touch of their pages in its first steps, which is time to first audio.
type Memory struct {
	talker, pred *kv.Cache
}

// Bytes is the memory the caches hold.
func (mem *Memory) Bytes() int64 {
	return int64(mem.talker.Bytes() + mem.pred.Bytes())
}

// Free ends u and hands back its caches, emptied, for a later
// utterance; u must not be stepped again. It returns nil the second
// time.
func (u *Utterance) Free() *Memory {
	s := u.s
	if s.talkerKV == nil {
		return nil
	}
	mem := &Memory{talker: s.talkerKV, pred: s.predKV}
	s.talkerKV, s.predKV = nil, nil
	s.done = true
	if s.stop == "" {
		s.stop = "canceled"
	}
	for _, c := range []*kv.Cache{mem.talker, mem.pred} {
		for _, l := range c.Layers {
			l.Truncate(0) // refused only by a sliding layer: caches then checks Len
		}
	}
	return mem
}

// caches returns mem's caches if they fit this model, else new ones.
func (m *Model) caches(mem *Memory) (talker, pred *kv.Cache) {
	if mem == nil || len(mem.talker.Layers) != m.Cfg.Talker.Layers || len(mem.pred.Layers) != m.Cfg.Predictor.Layers ||
		mem.talker.Len() != 0 || mem.pred.Len() != 0 {
		return m.NewTalkerCache(), m.NewPredictorCache()
	}
	return mem.talker, mem.pred
}
