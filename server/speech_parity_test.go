package server

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/tensor"
)

// TestSpeechPredictorParityMetrics: a model loaded with the in-situ
// parity check exports its figures; after a request of 4 frames checked
// on every frame, 60 sub-steps were compared and the agreement is a
// share in [0, 1]. Without the check the metrics are absent.
func TestSpeechPredictorParityMetrics(t *testing.T) {
	f := newSpeechFixtureWith(t, qwen3tts.Options{Predictor: tensor.W8A8, ParityCheck: true, ParityEvery: 1}, 4)
	srv := f.Server
	voice := f.m.Cfg.SupportedSpeakers()[0]
	f.say(t, context.Background(), speechParams("Hello there.", voice), map[string]any{"max_new_tokens": 5, "ignore_eos": true})
	metrics := getMetrics(t, srv.URL)
	steps := regexp.MustCompile(`siskin:speech_predictor_parity_substeps_total\{model_name="tts"\} (\S+)`).FindStringSubmatch(metrics)
	top1 := regexp.MustCompile(`siskin:speech_predictor_parity_top1_agreement\{model_name="tts"\} (\S+)`).FindStringSubmatch(metrics)
	for _, name := range []string{"top5_overlap", "max_logit_diff", "kl"} {
		if !regexp.MustCompile(`siskin:speech_predictor_parity_` + name + `\{`).MatchString(metrics) {
			t.Errorf("no %s in\n%s", name, metrics)
		}
	}
	if steps == nil || top1 == nil {
		t.Fatalf("metrics:\n%s", metrics)
	}
	n, _ := strconv.ParseFloat(steps[1], 64)
	a, _ := strconv.ParseFloat(top1[1], 64)
	if n != 4*15 || a < 0 || a > 1 {
		t.Fatalf("%v sub-steps, top-1 %v\n%s", n, a, metrics)
	}
	plain := newSpeechFixture(t)
	if regexp.MustCompile(`predictor_parity`).MatchString(getMetrics(t, plain.URL)) {
		t.Fatal("parity metrics without the check")
	}
}
