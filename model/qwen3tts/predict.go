package qwen3tts

import (
	"fmt"
	"slices"
	"time"

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
func (m *Model) predictFrames(p *predictor, streams []*stream) ([][]float32, error) {
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
	check := m.framesToCheck(p, streams)
	var bufs stepOut // the sub-steps' outputs, each read before the next
	var in []float32
	e := make([]float32, h)
	rows := n * 2
	var sampling time.Duration
	start := time.Now()
	for g := 0; g < groups-1; g++ {
		in = p.project(in, x, rows, cw)
		for i, s := range streams {
			if t := s.req.Trace; t != nil {
				f := len(t.CPInputs) - 1
				t.CPInputs[f] = append(t.CPInputs[f], in[i*counts[i]*cw:(i+1)*counts[i]*cw]...)
			}
		}
		out := run(p.dec, p.norm, caches, counts, in, p.lmHead[g], nil, &bufs)
		x = x[:0]
		for i, s := range streams {
			ts := time.Now()
			tok, err := s.predSeq.Sample(out.logits[i])
			sampling += time.Since(ts)
			if err != nil {
				return nil, fmt.Errorf("code predictor: %w", err)
			}
			frames[i] = append(frames[i], tok.ID)
			if check[i] != nil {
				check[i] = append(check[i], slices.Clone(out.logits[i]))
			}
			if t := s.req.Trace; t != nil {
				f := len(t.CPInputs) - 1
				t.CPLogits[f] = append(t.CPLogits[f], out.logits[i]...)
				t.CPHidden[f] = append(t.CPHidden[f], out.last[i]...)
			}
			model.Embed(e, p.embed[g], []int{tok.ID})
			kernels.Add(sums[i], e)
			x = append(x, e...)
			counts[i] = 1
		}
		rows = n
	}
	charge(streams, time.Since(start)-sampling, func(s *Stats) *time.Duration { return &s.Predictor })
	charge(streams, sampling, func(s *Stats) *time.Duration { return &s.Sampler })
	for i, s := range streams {
		if check[i] != nil {
			m.checkFrame(s.h, frames[i], check[i])
		}
		s.codes = append(s.codes, frames[i])
	}
	return sums, nil
}

// framesToCheck picks the streams whose frame the in-situ parity check
// compares this time (every ParityEvery-th frame of each): a non-nil
// entry gathers that stream's logits.
func (m *Model) framesToCheck(p *predictor, streams []*stream) [][][]float32 {
	check := make([][][]float32, len(streams))
	if m.parity == nil || p != m.pred || m.ref == m.pred {
		return check
	}
	for i, s := range streams {
		if len(s.codes)%m.parity.every == 0 {
			check[i] = make([][]float32, 0, m.Cfg.CodeGroups-1)
		}
	}
	return check
}

// predictAll is predictFrames for streams that may run different
// predictors (the running one, the float32 reference): one batch per
// predictor, the sums in the streams' order.
func (m *Model) predictAll(streams []*stream) ([][]float32, error) {
	sums := make([][]float32, len(streams))
	for _, p := range []*predictor{m.pred, m.ref} {
		var group []*stream
		var at []int
		for i, s := range streams {
			if s.pred == p && sums[i] == nil {
				group, at = append(group, s), append(at, i)
			}
		}
		if len(group) == 0 {
			continue
		}
		got, err := m.predictFrames(p, group)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			sums[i] = got[j]
		}
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
