package qwen3tts

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
	"github.com/siskin-ml/siskin/tensor"
)

// TestPredictorW8A8Parity: the int8 code predictor, teacher-forced on the
// float32 predictor's frames of the 128-wide synth model, picks the same
// top code in at least 90% of the sub-steps and its logits stay within
// 3% of the largest float32 logit (measured 0.950 and 0.30 of a largest
// logit of 13; random weights make near-ties common, so agreement says
// little in absolute terms).
func TestPredictorW8A8Parity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	if _, err := synth.Write(dir, synth.Options{Shape: "small", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	ref, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	q, err := LoadWith(dir, Options{PredictorW8A8: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.lmHead[0].Type != tensor.W8A8 {
		t.Fatalf("lm head is %s, want w8a8", q.lmHead[0].Type)
	}
	ids := []int{1, 2, 3, 10, 11, 12, 13, 14, 15, 4, 5, 6, 7, 8}
	req := ref.Cfg.NewRequest(ids, Voice{Speaker: ref.Cfg.SupportedSpeakers()[0]})
	req.Talker, req.Predictor = Sampling{Greedy: true}, Sampling{Greedy: true}
	req.MaxFrames, req.IgnoreEOS, req.Trace = 8, true, &Trace{}
	res, err := ref.Generate([]*Request{req})
	if err != nil {
		t.Fatal(err)
	}
	p, err := q.PredictorParity(req.Trace, res[0].Codes)
	if err != nil {
		t.Fatal(err)
	}
	self, err := ref.PredictorParity(req.Trace, res[0].Codes)
	if err != nil {
		t.Fatal(err)
	}
	var scale float64
	for _, l := range req.Trace.CPLogits {
		for _, v := range l {
			scale = max(scale, math.Abs(float64(v)))
		}
	}
	t.Logf("largest |float32 logit| %.3g", scale)
	t.Logf("w8a8 vs float32: %d sub-steps, top-1 agreement %.3f, max logit difference %.4g (float32 vs itself: %.3f, %.3g)",
		p.Steps, p.Top1, p.MaxLogitDiff, self.Top1, self.MaxLogitDiff)
	if self.Top1 != 1 || self.MaxLogitDiff > 1e-4 {
		t.Fatalf("teacher forcing does not reproduce the float32 run: %+v", self)
	}
	if p.Steps != 8*15 || p.Top1 < 0.9 || p.MaxLogitDiff > 0.03*scale {
		t.Fatalf("w8a8 parity %+v", p)
	}
}
