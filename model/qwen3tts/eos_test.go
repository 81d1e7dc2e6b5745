package qwen3tts

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// EOS, which no golden reaches: a copy of the checkpoint whose codec_head
// EOS row points along the first three steps' hidden states makes EOS the
// raw argmax at every step; min_new_tokens masks it at steps 0 and 1, so
// the utterance has exactly 2 frames, the same as the unmodified model's
// first two, and stops at step 2.
func TestEOSAfterMinNewTokens(t *testing.T) {
	base := openModel(t, ckptDir(t))
	g := loadGolden(t, "cv_ryan_english_nonstream")
	r := g.request(base)
	ref, err := base.Generate([]*Request{r})
	if err != nil {
		t.Fatal(err)
	}
	// EOS row = 100 * sum of the unit hidden states of steps 0..2 (steps
	// 0 and 1 do not depend on the EOS row: it is masked there).
	tensors, cfg := readFixture(t)
	head := tensors["talker.codec_head.weight"]
	eos, h := base.Cfg.CodecEOS, base.Cfg.Talker.Hidden
	row := head.data[eos*h : (eos+1)*h]
	clear(row)
	for s := 0; s < 3; s++ {
		hs := r.Trace.TalkerHidden[s]
		var n float64
		for _, v := range hs {
			n += float64(v) * float64(v)
		}
		for i, v := range hs {
			row[i] += float32(100 * float64(v) / math.Sqrt(n))
		}
	}
	m := openModel(t, writeCheckpoint(t, tensors, cfg))
	r2 := g.request(m)
	res, err := m.Generate([]*Request{r2})
	if err != nil {
		t.Fatal(err)
	}
	tr := r2.Trace
	for s, l := range tr.TalkerLogits {
		if top := slices.Index(l, slices.Max(l)); top != eos {
			t.Fatalf("step %d: raw argmax %d, the boosted checkpoint should make it EOS %d", s, top, eos)
		}
	}
	if got := res[0]; got.Stop != "eos" || len(got.Codes) != minNewTokens || len(tr.Code0) != minNewTokens+1 {
		t.Fatalf("stop %q after %d frames (%d talker steps), want eos after %d", got.Stop, len(got.Codes), len(tr.Code0), minNewTokens)
	}
	if !slices.EqualFunc(res[0].Codes, ref[0].Codes[:minNewTokens], slices.Equal) {
		t.Errorf("frames before EOS %v, want the unmodified model's %v", res[0].Codes, ref[0].Codes[:minNewTokens])
	}
	if !math.IsInf(float64(tr.TalkerScores[0][eos]), -1) || !math.IsInf(float64(tr.TalkerScores[1][eos]), -1) || math.IsInf(float64(tr.TalkerScores[2][eos]), -1) {
		t.Errorf("EOS scores %v %v %v: want masked at steps 0 and 1 only", tr.TalkerScores[0][eos], tr.TalkerScores[1][eos], tr.TalkerScores[2][eos])
	}
}

// An input whose prompt and frames would not fit the talker's positions is
// refused before anything runs.
func TestOverlongInputRefused(t *testing.T) {
	m := openModel(t, ckptDir(t))
	ids := make([]int, m.Cfg.Talker.ContextLength)
	for i := range ids {
		ids[i] = 151
	}
	r := m.Cfg.NewRequest(ids, Voice{Speaker: "ryan", Language: "english", NonStreaming: true})
	r.MaxFrames = 10
	_, err := m.Generate([]*Request{r})
	if err == nil || !strings.Contains(err.Error(), "max_position_embeddings") {
		t.Fatalf("error %v, want one about max_position_embeddings", err)
	}
	// Streaming puts fewer rows in the prompt, but the frames still count.
	r.NonStreaming, r.IDs, r.MaxFrames = false, ids[:100], m.Cfg.Talker.ContextLength
	if _, err = m.Generate([]*Request{r}); err == nil || !strings.Contains(err.Error(), "max_position_embeddings") {
		t.Fatalf("error %v, want one about max_position_embeddings", err)
	}
}
