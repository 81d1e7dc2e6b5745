package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// speechMetrics are a speech model's Prometheus metrics: vLLM's names
// where they apply, and speech ones (time to first audio, real-time
// factor, audio seconds, per-stage steps).
type speechMetrics struct {
	reg            *prometheus.Registry
	e2e, ttfa, rtf prometheus.Histogram
	audioSeconds   prometheus.Counter
	frames         prometheus.Counter
	success        *prometheus.CounterVec
}

func newSpeechMetrics(modelName string, eng *engine.Engine, tts *qwen3tts.Model) *speechMetrics {
	labels := prometheus.Labels{"model_name": modelName}
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func(engine.Stats) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return f(eng.Stats()) }))
	}
	gauge("vllm:num_requests_running", "Number of requests in the running batch.", func(s engine.Stats) float64 { return float64(s.Running) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to run.", func(s engine.Stats) float64 { return float64(s.Waiting) })
	gauge("vllm:kv_cache_usage_perc", "Reserved share of the memory budget (talker and predictor KV, codec state): 1 means full.", func(s engine.Stats) float64 {
		if s.KVBytes == 0 {
			return 0
		}
		return float64(s.KVUsedBytes) / float64(s.KVBytes)
	})
	for i, name := range []string{"talker", "codec"} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "siskin:speech_" + name + "_steps_total", Help: "Steps of the " + name + " stage.", ConstLabels: labels},
			func() float64 {
				if st := eng.Stats().Stages; i < len(st) {
					return float64(st[i].Steps)
				}
				return 0
			}))
	}
	registerParity(reg, labels, tts)
	buckets := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30, 60, 120}
	m := &speechMetrics{reg: reg}
	m.e2e = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:e2e_request_latency_seconds", Help: "End-to-end request latency.", ConstLabels: labels, Buckets: buckets})
	m.ttfa = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "siskin:speech_time_to_first_audio_seconds", Help: "Time from the request to its first audio (or codes).", ConstLabels: labels, Buckets: buckets})
	m.rtf = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "siskin:speech_real_time_factor", Help: "Generation time over audio duration (below 1 is faster than real time).", ConstLabels: labels, Buckets: []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 4, 8}})
	m.audioSeconds = prometheus.NewCounter(prometheus.CounterOpts{Name: "siskin:speech_audio_seconds_total", Help: "Seconds of audio produced.", ConstLabels: labels})
	m.frames = prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:generation_tokens_total", Help: "Codec frames generated.", ConstLabels: labels})
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: "Finished requests by finish reason.", ConstLabels: labels}, []string{"finished_reason"})
	reg.MustRegister(m.e2e, m.ttfa, m.rtf, m.audioSeconds, m.frames, m.success)
	return m
}

// registerParity adds the in-situ code predictor parity check's figures
// (qwen3tts.Options.ParityCheck) when the model runs it.
func registerParity(reg *prometheus.Registry, labels prometheus.Labels, tts *qwen3tts.Model) {
	if tts == nil {
		return
	}
	if _, ok := tts.PredictorParityStats(); !ok {
		return
	}
	stat := func(f func(qwen3tts.Parity) float64) func() float64 {
		return func() float64 { p, _ := tts.PredictorParityStats(); return f(p) }
	}
	for _, g := range []struct {
		name, help string
		f          func(qwen3tts.Parity) float64
	}{
		{"top1_agreement", "Share of checked code predictor sub-steps whose top code agrees with float32's.", func(p qwen3tts.Parity) float64 { return p.Top1 }},
		{"top5_overlap", "Mean share of float32's top 5 codes among the running predictor's top 5.", func(p qwen3tts.Parity) float64 { return p.Top5 }},
		{"max_logit_diff", "Largest |logit difference| from float32 over the checked sub-steps.", func(p qwen3tts.Parity) float64 { return p.MaxLogitDiff }},
		{"kl", "Mean KL(float32 || running) of the checked sub-steps' softmaxes, in nats.", func(p qwen3tts.Parity) float64 { return p.KL }},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "siskin:speech_predictor_parity_" + g.name, Help: g.help, ConstLabels: labels}, stat(g.f)))
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "siskin:speech_predictor_parity_substeps_total", Help: "Code predictor sub-steps compared with float32 in situ.", ConstLabels: labels},
		stat(func(p qwen3tts.Parity) float64 { return float64(p.Steps) })))
}

func (m *speechMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// speechTrack follows one request's events for the metrics.
type speechTrack struct {
	m       *speechMetrics
	start   time.Time
	first   bool
	samples int
	frames  int
}

// observe records an event of the request.
func (t *speechTrack) observe(ev engine.Event, o speechOut) {
	if t == nil || t.m == nil {
		return
	}
	if (len(o.pcm) > 0 || len(o.frames) > 0) && !t.first {
		t.first = true
		t.m.ttfa.Observe(time.Since(t.start).Seconds())
	}
	t.samples += len(o.pcm) / 2
	t.frames += len(o.frames)
	if ev.Finish == "" || ev.Err != nil || ev.Finish == engine.FinishAbort {
		return
	}
	took := time.Since(t.start).Seconds()
	t.m.e2e.Observe(took)
	t.m.success.WithLabelValues(string(ev.Finish)).Inc()
	secs := float64(t.samples) / codec.SampleRate
	if t.frames > 0 {
		secs = float64(t.frames) * 0.08
	}
	t.m.frames.Add(secs / 0.08)
	t.m.audioSeconds.Add(secs)
	if secs > 0 {
		t.m.rtf.Observe(took / secs)
	}
}
