package qwen3tts

import (
	"fmt"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

// predictFrames runs the code predictor for each stream's current
// code0 (TS §7): a fresh cache with positions from 0, a 2-row prefill
// [proj(h), proj(C(code0))] that predicts codebook 1, then one row
// proj(E[j-2](code j-1)) per sub-step j = 2..15. It appends each stream's
// frame and returns the frames' talker-width sums of their 16
// embeddings.
func (m *Model) predictFrames(streams []*stream) ([][]float32, error) {
	c := m.Cfg
	h, cw, groups := c.Talker.Hidden, c.Predictor.Hidden, c.CodeGroups
	n := len(streams)
	caches, counts := make([]*kv.Cache, n), make([]int, n)
	frames := make([][]int, n)
	sums := make([][]float32, n) // the frames' embedding sums, talker width
	x := make([]float32, 0, 2*n*h)
	for i, s := range streams {
		for _, l := range s.predKV.Layers {
			if err := l.Truncate(0); err != nil {
				return nil, err
			}
		}
		caches[i], counts[i] = s.predKV, 2
		e := m.CodecRows([]int{s.code0})
		x = append(append(x, s.h...), e...)
		sums[i] = e
		frames[i] = append(make([]int, 0, groups), s.code0)
		if t := s.req.Trace; t != nil {
			t.CPInputs = append(t.CPInputs, nil)
			t.CPLogits = append(t.CPLogits, nil)
			t.CPHidden = append(t.CPHidden, nil)
		}
	}
	rows := n * 2
	for g := 0; g < groups-1; g++ {
		in := m.project(x, rows)
		for i, s := range streams {
			if t := s.req.Trace; t != nil {
				f := len(t.CPInputs) - 1
				t.CPInputs[f] = append(t.CPInputs[f], in[i*counts[i]*cw:(i+1)*counts[i]*cw]...)
			}
		}
		out := run(m.pred, m.predNorm, caches, counts, in, m.lmHead[g], nil)
		x = x[:0]
		for i, s := range streams {
			tok, err := s.predSeq.Sample(out.logits[i])
			if err != nil {
				return nil, fmt.Errorf("code predictor: %w", err)
			}
			frames[i] = append(frames[i], tok.ID)
			if t := s.req.Trace; t != nil {
				f := len(t.CPInputs) - 1
				t.CPLogits[f] = append(t.CPLogits[f], out.logits[i]...)
				t.CPHidden[f] = append(t.CPHidden[f], out.last[i]...)
			}
			e := make([]float32, h)
			model.Embed(e, m.predEmbed[g], []int{tok.ID})
			kernels.Add(sums[i], e)
			x = append(x, e...)
			counts[i] = 1
		}
		rows = n
	}
	for i, s := range streams {
		s.codes = append(s.codes, frames[i])
	}
	return sums, nil
}

// nextInputs adds to each stream's frame embedding the text row of its
// next talker step: trailing text row f for frame f, T(tts_pad) after.
func (m *Model) nextInputs(streams []*stream, sums [][]float32) [][]float32 {
	h := m.Cfg.Talker.Hidden
	next := make([][]float32, len(streams))
	for i, s := range streams {
		f := len(s.codes) - 1
		row := m.padRow()
		if f < len(s.trailing)/h {
			row = s.trailing[f*h : (f+1)*h]
		}
		next[i] = append([]float32(nil), sums[i]...)
		kernels.Add(next[i], row)
		if t := s.req.Trace; t != nil {
			t.NextInputs = append(t.NextInputs, next[i])
		}
	}
	return next
}

// padRow is T(tts_pad), the text row once the trailing text runs out.
func (m *Model) padRow() []float32 {
	m.padOnce.Do(func() {
		m.pad, _ = m.TextRows([]int{m.Cfg.TTSPad}) // the id was checked against the vocabulary
	})
	return m.pad
}
