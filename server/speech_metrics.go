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

// Help texts of the metric names the LLM and speech servers share: one
// /metrics that gathers both (server.Both) needs them equal.
const (
	helpRunning   = "Number of requests in the running batch."
	helpWaiting   = "Number of requests waiting to run."
	helpE2E       = "End-to-end request latency."
	helpSuccess   = "Finished requests by finish reason."
	helpGenerated = "Generated tokens."
	helpKVUsage   = "KV cache usage by running requests: 1 means full."
	helpPrefixQ   = "Prefix cache queries, in prompt tokens."
	helpPrefixH   = "Prefix cache hits, in prompt tokens."
)

// speechStages are the parts of a speech step the engine times
// (engine.ObserveSteps).
var speechStages = []string{"talker", "predictor", "sampler", "codec"}

// speechMetrics are a speech model's Prometheus metrics: vLLM's names
// where they apply (a speech model's tokens are talker prompt rows and
// codec frames; its prefix cache is the conditioning cache), and speech
// ones: time to first audio, real-time factor, audio seconds and each
// stage's step time.
type speechMetrics struct {
	reg            *prometheus.Registry
	e2e, ttfa, rtf prometheus.Histogram
	audioSeconds   prometheus.Counter
	frames         prometheus.Counter
	success        *prometheus.CounterVec
	steps          map[string]prometheus.Observer
}

func newSpeechMetrics(modelName string, eng *engine.Engine, tts *qwen3tts.Model) *speechMetrics {
	labels := prometheus.Labels{"model_name": modelName}
	reg := prometheus.NewRegistry()
	stat := func(name, help string, counter bool, f func(engine.Stats) float64) {
		fn := func() float64 { return f(eng.Stats()) }
		if counter {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, fn))
			return
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, fn))
	}
	stat("vllm:num_requests_running", helpRunning, false, func(s engine.Stats) float64 { return float64(s.Running) })
	stat("vllm:num_requests_waiting", helpWaiting, false, func(s engine.Stats) float64 { return float64(s.Waiting) })
	stat("vllm:kv_cache_usage_perc", helpKVUsage, false, func(s engine.Stats) float64 {
		if s.KVBytes == 0 {
			return 0
		}
		return float64(s.KVUsedBytes) / float64(s.KVBytes)
	})
	stat("vllm:prefix_cache_queries_total", helpPrefixQ, true, func(s engine.Stats) float64 { return float64(s.PrefixQueries) })
	stat("vllm:prefix_cache_hits_total", helpPrefixH, true, func(s engine.Stats) float64 { return float64(s.PrefixHits) })
	for i, name := range []string{"talker", "codec"} {
		stat("siskin:speech_"+name+"_steps_total", "Steps of the "+name+" stage.", true, func(s engine.Stats) float64 {
			if i < len(s.Stages) {
				return float64(s.Stages[i].Steps)
			}
			return 0
		})
	}
	registerParity(reg, labels, tts)
	m := &speechMetrics{reg: reg}
	m.registerHistograms(labels)
	eng.ObserveSteps(m.observeStep)
	return m
}

// registerHistograms adds the per-request and per-step metrics.
func (m *speechMetrics) registerHistograms(labels prometheus.Labels) {
	buckets := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30, 60, 120}
	m.e2e = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:e2e_request_latency_seconds", Help: helpE2E, ConstLabels: labels, Buckets: buckets})
	m.ttfa = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "siskin:speech_time_to_first_audio_seconds", Help: "Time from the request to its first audio (or codes).", ConstLabels: labels, Buckets: buckets})
	m.rtf = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "siskin:speech_real_time_factor", Help: "Generation time over audio duration (below 1 is faster than real time).", ConstLabels: labels, Buckets: []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 4, 8}})
	m.audioSeconds = prometheus.NewCounter(prometheus.CounterOpts{Name: "siskin:speech_audio_seconds_total", Help: "Seconds of audio produced.", ConstLabels: labels})
	m.frames = prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:generation_tokens_total", Help: helpGenerated, ConstLabels: labels})
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: helpSuccess, ConstLabels: labels}, []string{"finished_reason"})
	steps := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "siskin:speech_step_seconds", Help: "Time of one batched step by stage: talker (its decoder pass), predictor (its 15 sub-steps), sampler (both sides' token rules and sampling), codec (a decode step).", ConstLabels: labels,
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}}, []string{"stage"})
	m.steps = map[string]prometheus.Observer{}
	for _, st := range speechStages {
		m.steps[st] = steps.WithLabelValues(st)
	}
	m.reg.MustRegister(m.e2e, m.ttfa, m.rtf, m.audioSeconds, m.frames, m.success, steps)
}

// observeStep records a stage step's time (on the engine's loop).
func (m *speechMetrics) observeStep(part string, d time.Duration) {
	if o, ok := m.steps[part]; ok {
		o.Observe(d.Seconds())
	}
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

// frameSeconds is one codec frame's audio (12.5 frames a second).
const frameSeconds = 0.08

// speechTrack follows one request's events for the metrics.
type speechTrack struct {
	m       *speechMetrics
	start   time.Time
	first   bool
	samples int
	frames  int
	ttfa    float64 // seconds to the first audio or codes
	took    float64 // seconds to the end
}

// outFrames is how many frames the request has delivered.
func (t *speechTrack) outFrames() int {
	if t.frames > 0 {
		return t.frames
	}
	return t.samples / (codec.SampleRate * frameSeconds)
}

// audioSeconds is the audio delivered (or that the codes stand for).
func (t *speechTrack) audioSeconds() float64 {
	if t.frames > 0 {
		return float64(t.frames) * frameSeconds
	}
	return float64(t.samples) / codec.SampleRate
}

// observe records an event of the request.
func (t *speechTrack) observe(ev engine.Event, o speechOut) {
	if t == nil || t.m == nil {
		return
	}
	if (len(o.pcm) > 0 || len(o.frames) > 0) && !t.first {
		t.first = true
		t.ttfa = time.Since(t.start).Seconds()
		t.m.ttfa.Observe(t.ttfa)
	}
	t.samples += len(o.pcm) / 2
	t.frames += len(o.frames)
	if ev.Finish == "" || ev.Err != nil || ev.Finish == engine.FinishAbort {
		return
	}
	t.took = time.Since(t.start).Seconds()
	t.m.e2e.Observe(t.took)
	t.m.success.WithLabelValues(string(ev.Finish)).Inc()
	secs := t.audioSeconds()
	t.m.frames.Add(secs / frameSeconds)
	t.m.audioSeconds.Add(secs)
	if secs > 0 {
		t.m.rtf.Observe(t.took / secs)
	}
}
