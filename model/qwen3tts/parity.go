package qwen3tts

import (
	"fmt"
	"math"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
)

// Parity compares a code predictor's logits with a reference's,
// teacher-forced: both see the reference's inputs and codes.
type Parity struct {
	Steps        int     // sub-steps compared
	Top1         float64 // share of sub-steps whose argmax agrees
	MaxLogitDiff float64 // largest |logit difference|
}

// PredictorParity runs m's code predictor on the frames a reference
// request traced (Trace.TalkerHidden, Code0, CPLogits and the frames'
// codes) and compares its logits with the reference's.
func (m *Model) PredictorParity(t *Trace, codes [][]int) (Parity, error) {
	var p Parity
	agree := 0
	for f, frame := range codes {
		if f >= len(t.TalkerHidden) || f >= len(t.CPLogits) {
			return p, fmt.Errorf("frame %d is not in the trace", f)
		}
		got := m.forcedPredictor(t.TalkerHidden[f], frame)
		ref := t.CPLogits[f]
		for g, l := range got {
			r := ref[g*len(l) : (g+1)*len(l)]
			if argmax(l) == argmax(r) {
				agree++
			}
			for i := range l {
				p.MaxLogitDiff = max(p.MaxLogitDiff, math.Abs(float64(l[i]-r[i])))
			}
			p.Steps++
		}
	}
	if p.Steps > 0 {
		p.Top1 = float64(agree) / float64(p.Steps)
	}
	return p, nil
}

// forcedPredictor is predictFrames for one stream with the codes given:
// the logits of each of the 15 sub-steps.
func (m *Model) forcedPredictor(h []float32, frame []int) [][]float32 {
	c := m.Cfg
	cache := m.NewPredictorCache()
	x := append(append([]float32(nil), h...), m.CodecRows([]int{frame[0]})...)
	rows := 2
	var out [][]float32
	for g := 0; g < c.CodeGroups-1; g++ {
		in := m.project(x, rows)
		o := run(m.pred, m.predNorm, []*kv.Cache{cache}, []int{rows}, in, m.lmHead[g], nil)
		out = append(out, o.logits[0])
		x = make([]float32, c.Talker.Hidden)
		model.Embed(x, m.predEmbed[g], []int{frame[g+1]})
		rows = 1
	}
	return out
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
