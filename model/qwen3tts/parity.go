package qwen3tts

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tensor"
)

// Parity compares a code predictor's logits with a reference's over the
// same inputs.
type Parity struct {
	Steps        int     // sub-steps compared
	Top1         float64 // share of sub-steps whose argmax agrees
	Top5         float64 // mean share of the reference's top 5 codes among the other's top 5
	MaxLogitDiff float64 // largest |logit difference|
	KL           float64 // mean KL(reference || other) of the softmaxes, in nats
}

// parityAcc adds up a Parity.
type parityAcc struct {
	steps, agree int
	top5, kl     float64
	maxDiff      float64
}

// add compares one sub-step's logits with the reference's.
func (a *parityAcc) add(got, ref []float32) {
	a.steps++
	if sample.Argmax(got) == sample.Argmax(ref) {
		a.agree++
	}
	tg, tr := topK(got, 5), topK(ref, 5)
	n := 0
	for _, i := range tr {
		for _, j := range tg {
			if i == j {
				n++
			}
		}
	}
	a.top5 += float64(n) / float64(len(tr))
	for i := range got {
		a.maxDiff = max(a.maxDiff, math.Abs(float64(got[i]-ref[i])))
	}
	a.kl += kl(ref, got)
}

func (a *parityAcc) result() Parity {
	p := Parity{Steps: a.steps, MaxLogitDiff: a.maxDiff}
	if a.steps > 0 {
		n := float64(a.steps)
		p.Top1, p.Top5, p.KL = float64(a.agree)/n, a.top5/n, a.kl/n
	}
	return p
}

// topK returns the indices of the k largest values.
func topK(v []float32, k int) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
	return idx[:min(k, len(idx))]
}

// paritySink gathers the in-situ check's comparisons across requests.
type paritySink struct {
	every int
	mu    sync.Mutex
	acc   parityAcc
}

// PredictorParityStats is the in-situ parity check so far (Options
// ParityCheck): the running predictor's logits on every ParityEvery-th
// frame against the float32 predictor's on the same inputs and codes.
// ok is false without the check.
func (m *Model) PredictorParityStats() (p Parity, ok bool) {
	if m.parity == nil {
		return Parity{}, false
	}
	m.parity.mu.Lock()
	defer m.parity.mu.Unlock()
	return m.parity.acc.result(), true
}

// loadChecks loads the parity checks' predictors: the float32 reference
// (the running predictor itself when that is not converted) and the
// per-row int8 baseline. Their bytes are not counted as the model's.
func (m *Model) loadChecks(src *model.Source, o Options, pt tensor.Type) error {
	if !o.ParityCheck && !o.RowInt8Baseline {
		return nil
	}
	w := &model.Loader{Source: src, Layers: m.Cfg.Talker.Layers}
	m.ref = m.pred
	if pt != 0 {
		m.ref = loadPredictor(w, m.Cfg)
	}
	if o.RowInt8Baseline {
		if err := withStore(src, rowInt8Store{}, func() { m.baseline = loadPredictor(w, m.Cfg) }); err != nil {
			return err
		}
	}
	if o.ParityCheck {
		m.parity = &paritySink{every: o.ParityEvery}
		if m.parity.every <= 0 {
			m.parity.every = 8
		}
	}
	return w.Err
}

// checkFrame compares a frame's logits from the running predictor with
// the float32 reference's on the same inputs and codes.
func (m *Model) checkFrame(h []float32, frame []int, logits [][]float32) {
	ref := m.forced(m.ref, h, frame)
	m.parity.mu.Lock()
	defer m.parity.mu.Unlock()
	for g, l := range logits {
		m.parity.acc.add(l, ref[g])
	}
}

// PredictorParity runs m's code predictor on the frames a reference
// request traced (Trace.TalkerHidden, Code0, CPLogits and the frames'
// codes) and compares its logits with the reference's.
func (m *Model) PredictorParity(t *Trace, codes [][]int) (Parity, error) {
	return m.parityOf(m.pred, t, codes)
}

func (m *Model) parityOf(p *predictor, t *Trace, codes [][]int) (Parity, error) {
	var a parityAcc
	for f, frame := range codes {
		if f >= len(t.TalkerHidden) || f >= len(t.CPLogits) {
			return Parity{}, fmt.Errorf("frame %d is not in the trace", f)
		}
		got := m.forced(p, t.TalkerHidden[f], frame)
		ref := t.CPLogits[f]
		for g, l := range got {
			a.add(l, ref[g*len(l):(g+1)*len(l)])
		}
	}
	return a.result(), nil
}

// TeacherForcedParity generates req (its Trace and ReferencePredictor
// are set here) with the float32 predictor, then runs the model's
// predictor and, when loaded (Options.RowInt8Baseline), the per-row int8
// baseline on its frames and compares their logits with the float32
// ones. It needs Options.ParityCheck or RowInt8Baseline.
func (m *Model) TeacherForcedParity(req *Request) (running, baseline Parity, err error) {
	if m.ref == nil {
		return running, baseline, errors.New("the model was loaded without a float32 reference predictor (Options.ParityCheck)")
	}
	req.Trace, req.ReferencePredictor = &Trace{}, true
	res, err := m.Generate([]*Request{req})
	if err != nil {
		return running, baseline, err
	}
	if running, err = m.parityOf(m.pred, req.Trace, res[0].Codes); err != nil || m.baseline == nil {
		return running, baseline, err
	}
	baseline, err = m.parityOf(m.baseline, req.Trace, res[0].Codes)
	return running, baseline, err
}

// forced is predictFrames for one stream on predictor p with the codes
// given: the logits of each of the 15 sub-steps.
func (m *Model) forced(p *predictor, h []float32, frame []int) [][]float32 {
	c := m.Cfg
	cache := m.NewPredictorCache()
	x := append(append([]float32(nil), h...), m.CodecRows([]int{frame[0]})...)
	rows := 2
	var out [][]float32
	for g := 0; g < c.CodeGroups-1; g++ {
		in := p.project(nil, x, rows, c.Predictor.Hidden)
		o := run(p.dec, p.norm, []*kv.Cache{cache}, []int{rows}, in, p.lmHead[g], nil, nil)
		out = append(out, o.logits[0])
		x = make([]float32, c.Talker.Hidden)
		model.Embed(x, p.embed[g], []int{frame[g+1]})
		rows = 1
	}
	return out
}

// kl is KL(softmax(p) || softmax(q)) in float64, as eval.KL (which this
// package cannot import: eval's tests import the engine, which imports it).
func kl(p, q []float32) float64 {
	lp, lq := logSoftmax(p), logSoftmax(q)
	var s float64
	for i := range lp {
		s += math.Exp(lp[i]) * (lp[i] - lq[i])
	}
	return max(s, 0)
}

func logSoftmax(v []float32) []float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = max(mx, float64(x))
	}
	var sum float64
	for _, x := range v {
		sum += math.Exp(float64(x) - mx)
	}
	out := make([]float64, len(v))
	lse := mx + math.Log(sum)
	for i, x := range v {
		out[i] = float64(x) - lse
	}
	return out
}
