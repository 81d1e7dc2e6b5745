package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
	"github.com/siskin-ml/siskin/tensor"
)

// TestBenchTTS runs bench --tts on a tiny random-weight folder: every
// figure present and consistent (a few frames, small probes).
func TestBenchTTS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tts")
	if _, err := synth.Write(dir, synth.Options{Shape: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	out, err := siskin(t, "bench", "--tts", "-m", dir, "-t", "2", "--frames", "6", "--ignore-eos", "-r", "2", "--bw-mib", "32", "--bw-runs", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Test   string
		Frames int
		Stop   string
		RTF    float64 `json:"rtf"`
		First  float64 `json:"first_audio_ms"`
		Talker float64 `json:"talker_ms_per_frame"`
		Pred   float64 `json:"predictor_ms_per_frame"`
		Codec  float64 `json:"codec_ms_per_frame"`
		BW     float64 `json:"bandwidth_gbs"`
		Peak   float64 `json:"fp32_peak_gflops"`
		Share  float64 `json:"codec_floor_share"` // against the peaks probed between repetitions
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Test != "tts6" || r.Frames != 6 || r.Stop != "max_frames" || !(r.RTF > 0) || !(r.First > 0) || !(r.Talker > 0) || !(r.Pred > 0) || !(r.Codec > 0) || !(r.BW > 0) || !(r.Peak > 0) || !(r.Share > 0) {
		t.Fatalf("bench --tts: %s", out)
	}
	table, err := siskin(t, "bench", "--tts", "-m", dir, "--frames", "2", "--ignore-eos", "-r", "1", "--no-bandwidth")
	if err != nil || !strings.Contains(table, "real-time factor") || strings.Contains(table, "GB/s") {
		t.Fatalf("table: %v\n%s", err, table)
	}
	if _, err := siskin(t, "bench", "--tts", "-m", dir, "--frames", "2", "-r", "1", "--no-bandwidth", "--predictor-w8a8"); err != nil {
		t.Fatalf("--predictor-w8a8: %v", err)
	}
	out, err = siskin(t, "bench", "--tts", "-m", dir, "--frames", "2", "--ignore-eos", "-r", "1", "--no-bandwidth", "--concurrency", "1,2",
		"--predictor", "w4a8", "--talker", "w8a8", "--predictor-parity-check", "--vs-float32", "--json")
	var many []struct {
		Streams int     `json:"streams"`
		Audio   float64 `json:"audio_seconds_per_second"`
		Ratio   float64 `json:"predictor_over_float32"`
		Parity  []struct {
			Name  string  `json:"name"`
			Steps int     `json:"sub_steps"`
			Top1  float64 `json:"top1_agreement"`
		} `json:"predictor_parity"`
	}
	if err != nil || json.Unmarshal([]byte(out), &many) != nil || len(many) != 2 || many[1].Streams != 2 || !(many[1].Audio > 0) ||
		!(many[0].Ratio > 0) || len(many[0].Parity) != 3 || many[0].Parity[1].Steps != 2*15 {
		t.Fatalf("--concurrency 1,2 with parity: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"--predictor", "q4_0"}, {"--predictor", "int4"}, {"--talker", "w4a16"}, {"--predictor-parity-check"}, {"--concurrency", "0"}, {"--codec-chunk", "-1"}, {"--codec-chunk", "17"}} {
		if _, err := siskin(t, append([]string{"bench", "--tts", "-m", dir, "--frames", "1", "-r", "1", "--no-bandwidth"}, bad...)...); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
	if _, err := siskin(t, "bench", "--tts", "-m", dir, "--frames", "0"); err == nil || !strings.Contains(err.Error(), "--frames") {
		t.Fatalf("--frames 0: %v", err)
	}
}

// TestSpeechLoadOptions: serve's speech weight flags become load options;
// the parity check needs a converted predictor, and bad types are named.
func TestSpeechLoadOptions(t *testing.T) {
	saved := speechWeights
	defer func() { speechWeights = saved }()
	speechWeights.predictor, speechWeights.talker, speechWeights.parity = "w4a8", "W8A8", true
	o, err := speechLoadOptions()
	if err != nil || o.Predictor != tensor.W4A8 || o.Talker != tensor.W8A8 || !o.ParityCheck || o.RowInt8Baseline {
		t.Fatalf("%+v %v", o, err)
	}
	speechWeights.predictor = ""
	if _, err := speechLoadOptions(); err == nil || !strings.Contains(err.Error(), "--speech-predictor") {
		t.Fatalf("parity without a converted predictor: %v", err)
	}
	speechWeights.predictor, speechWeights.parity = "q4_k", false
	if o, err := speechLoadOptions(); err != nil || o.Predictor != tensor.Q4_K {
		t.Fatalf("q4_k: %+v %v", o, err)
	}
	speechWeights.predictor = "q6_k"
	if _, err := speechLoadOptions(); err == nil || !strings.Contains(err.Error(), `--speech-predictor "q6_k"`) {
		t.Fatalf("q6_k: %v", err)
	}
}

// TestBenchTTSServe runs bench --tts --serve on a tiny random-weight
// folder: every request reaches its first audio through the route and
// the split adds up (no figure is checked against a time).
func TestBenchTTSServe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tts")
	if _, err := synth.Write(dir, synth.Options{Shape: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	out, err := siskin(t, "bench", "--tts", "--serve", "-m", dir, "-t", "2", "--frames", "3", "-r", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r ttfaServeResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for name, s := range map[string]ttfaSplit{"first of the process": r.FirstEver, "first of a voice": r.FirstVoice, "cached": r.Cached} {
		if !(s.TotalMS > 0) || !(s.TalkerMS > 0) || !(s.PredictorMS > 0) || !(s.CodecMS > 0) {
			t.Errorf("%s: %+v", name, s)
		}
	}
	// One request's parts add up to its total (medians need not).
	s := r.FirstEver
	if parts := s.TalkerMS + s.PredictorMS + s.SamplerMS + s.CodecMS + s.DeliveryMS + s.OtherMS; math.Abs(parts-s.TotalMS) > 1e-6*s.TotalMS {
		t.Errorf("first of the process: parts %g ms, total %g ms", parts, s.TotalMS)
	}
	if r.Reps != 2 || r.Text != serveTTSText || !r.NonStreamingMode || !(r.FirstMin > 0) || !(r.CachedMin > 0) {
		t.Errorf("bench --tts --serve: %s", out)
	}
	table, err := siskin(t, "bench", "--tts", "--serve", "-m", dir, "--frames", "2", "-r", "1", "--voice", "ryan", "--non-streaming-mode=false")
	if err != nil || !strings.Contains(table, "cached conditioning") || !strings.Contains(table, "non_streaming_mode false") {
		t.Fatalf("table: %v\n%s", err, table)
	}
}
