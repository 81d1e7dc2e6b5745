package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/siskin-ml/siskin/engine"
)

// metrics exposes vLLM's metric names so existing dashboards and
// inference routers work unchanged. vLLM's Python client appends _total
// to every counter's name, so the counters here carry it in their names
// (vllm:prefix_cache_hits_total is what llm-d's router scrapes).
type metrics struct {
	reg     *prometheus.Registry
	ttft    prometheus.Histogram
	itl     prometheus.Histogram
	e2e     prometheus.Histogram
	success *prometheus.CounterVec
}

func newMetrics(modelName string, eng *engine.Engine) *metrics {
	labels := prometheus.Labels{"model_name": modelName}
	reg := prometheus.NewRegistry()
	m := &metrics{reg: reg}
	gauge := func(name, help string, f func(engine.Stats) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return f(eng.Stats()) }))
	}
	counter := func(name, help string, f func(engine.Stats) float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return f(eng.Stats()) }))
	}
	gauge("vllm:num_requests_running", helpRunning, func(s engine.Stats) float64 { return float64(s.Running) })
	gauge("vllm:num_requests_waiting", helpWaiting, func(s engine.Stats) float64 { return float64(s.Waiting) })
	gauge("vllm:kv_cache_usage_perc", helpKVUsage, func(s engine.Stats) float64 {
		if s.KVBytes == 0 {
			return 0
		}
		return float64(s.KVUsedBytes) / float64(s.KVBytes)
	})
	counter("vllm:prefix_cache_queries_total", helpPrefixQ, func(s engine.Stats) float64 { return float64(s.PrefixQueries) })
	counter("vllm:prefix_cache_hits_total", helpPrefixH, func(s engine.Stats) float64 { return float64(s.PrefixHits) })
	counter("vllm:prompt_tokens_total", "Prompt tokens processed.", func(s engine.Stats) float64 { return float64(s.PromptTokens) })
	counter("vllm:generation_tokens_total", helpGenerated, func(s engine.Stats) float64 { return float64(s.GenerationTokens) })
	buckets := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	m.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds", Help: "Time to first token.", ConstLabels: labels, Buckets: buckets})
	m.itl = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:inter_token_latency_seconds", Help: "Time between generated tokens.", ConstLabels: labels, Buckets: buckets})
	m.e2e = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:e2e_request_latency_seconds", Help: helpE2E, ConstLabels: labels, Buckets: buckets})
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: helpSuccess, ConstLabels: labels}, []string{"finished_reason"})
	reg.MustRegister(m.ttft, m.itl, m.e2e, m.success)
	registerInfo(reg, labels, eng)
	return m
}

// registerInfo adds the two labelled gauges the Gateway API inference
// extension's endpoint picker reads besides the queue and KV gauges (its
// model server protocol, docs/proposals/003-model-server-protocol):
// vllm:cache_config_info (value 1; block_size and num_gpu_blocks size
// the picker's approximate prefix cache) and vllm:lora_requests_info
// (value: the time of the last update; siskin serves no LoRA adapters, so
// max_lora is 0 and both adapter lists are empty). Both carry model_name
// like every metric here.
func registerInfo(reg *prometheus.Registry, labels prometheus.Labels, eng *engine.Engine) {
	cfg := eng.Model().Config()
	blocks := int64(0)
	if per := cfg.KVBytes(engine.BlockSize); per > 0 {
		blocks = eng.Stats().KVBytes / per
	}
	cache := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "Information of the KV cache configuration.",
		ConstLabels: prometheus.Labels{"block_size": strconv.Itoa(engine.BlockSize), "num_gpu_blocks": strconv.FormatInt(blocks, 10),
			"cache_dtype": cfg.KVType.String(), "enable_prefix_caching": "True", "model_name": labels["model_name"]}})
	cache.Set(1)
	lora := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:lora_requests_info", Help: "Running stats on LoRA requests.", ConstLabels: labels},
		[]string{"running_lora_adapters", "max_lora", "waiting_lora_adapters"})
	lora.WithLabelValues("", "0", "").Set(float64(time.Now().UnixNano()) / 1e9)
	reg.MustRegister(cache, lora)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
