package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/siskin-ml/siskin/engine"
)

// This file checks siskin against the Gateway API inference extension's
// endpoint picker (EPP). The EPP's own scheduling code cannot be imported
// here without pulling Kubernetes' client libraries into siskin's module,
// so picker is a small reimplementation of its documented default
// profile (site-src/guides/epp-configuration): queue-scorer (weight 1),
// kv-cache-utilization-scorer (weight 1) and the approximate
// prefix-cache-scorer (weight 3, as deploy/kubernetes/epp.yaml sets them;
// blocks of the scraped block_size times 4 characters, chained hashes
// seeded with the model name, at most 256 blocks, remembering which
// endpoint each block was sent to), then max-score-picker (highest
// weighted sum, ties broken at random), as in the extension's v1.1.0.
// Its scrape reads the metric names of the model server protocol with
// the Prometheus text parser the EPP uses. The hash function differs
// (FNV-1a here, xxhash there), which changes no decision.

const (
	pickerCharsPerToken = 4 // the EPP's estimate, to turn block_size into characters
	pickerMaxBlocks     = 256
)

// endpointMetrics is what the EPP keeps per endpoint from a scrape.
type endpointMetrics struct {
	waiting, running, kvUsage float64
	prefixHits, prefixQueries float64
	blockSize, numBlocks      int
	maxLoRA                   int
}

type picker struct {
	model string
	rng   *rand.Rand
	seen  map[uint64]map[int]bool // prefix block hash -> endpoints it was sent to
}

func newPicker(model string) *picker {
	return &picker{model: model, rng: rand.New(rand.NewPCG(1, 2)), seen: map[uint64]map[int]bool{}}
}

// scrape reads an endpoint's /metrics as the EPP's metrics client does.
func scrape(t *testing.T, url string) endpointMetrics {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s/metrics does not parse: %v", url, err)
	}
	one := func(name string, typ dto.MetricType) *dto.Metric {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("%s: want one %s series, got %v", url, name, f)
		}
		if f.GetType() != typ {
			t.Fatalf("%s: %s is a %v, the protocol wants %v", url, name, f.GetType(), typ)
		}
		return f.Metric[0]
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.Label {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		t.Fatalf("%s: no label %s on %v", url, name, m)
		return ""
	}
	var e endpointMetrics
	e.waiting = one("vllm:num_requests_waiting", dto.MetricType_GAUGE).Gauge.GetValue()
	e.running = one("vllm:num_requests_running", dto.MetricType_GAUGE).Gauge.GetValue()
	e.kvUsage = one("vllm:kv_cache_usage_perc", dto.MetricType_GAUGE).Gauge.GetValue()
	e.prefixHits = one("vllm:prefix_cache_hits_total", dto.MetricType_COUNTER).Counter.GetValue()
	e.prefixQueries = one("vllm:prefix_cache_queries_total", dto.MetricType_COUNTER).Counter.GetValue()
	cc := one("vllm:cache_config_info", dto.MetricType_GAUGE)
	e.blockSize, _ = strconv.Atoi(label(cc, "block_size"))
	e.numBlocks, _ = strconv.Atoi(label(cc, "num_gpu_blocks"))
	lora := one("vllm:lora_requests_info", dto.MetricType_GAUGE)
	e.maxLoRA, _ = strconv.Atoi(label(lora, "max_lora"))
	label(lora, "running_lora_adapters")
	label(lora, "waiting_lora_adapters")
	return e
}

// blockHashes are the prompt's chained block hashes, as the approximate
// prefix scorer computes them: full 64-character blocks only.
func (p *picker) blockHashes(prompt string, blockChars int) []uint64 {
	h := fnv.New64a()
	h.Write([]byte(p.model))
	prev := h.Sum64()
	var out []uint64
	for i := 0; i+blockChars <= len(prompt) && len(out) < pickerMaxBlocks; i += blockChars {
		h.Reset()
		h.Write([]byte(prompt[i : i+blockChars]))
		h.Write(binary.LittleEndian.AppendUint64(nil, prev))
		prev = h.Sum64()
		out = append(out, prev)
	}
	return out
}

// pick scores every endpoint and returns the best, with the scores.
func (p *picker) pick(ms []endpointMetrics, prompt string) (int, []float64) {
	minQ, maxQ := ms[0].waiting, ms[0].waiting
	for _, m := range ms {
		minQ, maxQ = min(minQ, m.waiting), max(maxQ, m.waiting)
	}
	blockChars := 64 // the EPP's default when the server exports no block size
	if ms[0].blockSize > 0 {
		blockChars = ms[0].blockSize * pickerCharsPerToken
	}
	hashes := p.blockHashes(prompt, blockChars)
	scores := make([]float64, len(ms))
	for i, m := range ms {
		queue := 1.0
		if maxQ > minQ {
			queue = (maxQ - m.waiting) / (maxQ - minQ)
		}
		kv := 1 - m.kvUsage
		prefix := 0.0
		if len(hashes) > 0 {
			matched := 0
			for _, h := range hashes {
				if !p.seen[h][i] {
					break
				}
				matched++
			}
			prefix = float64(matched) / float64(len(hashes))
		}
		scores[i] = 1*queue + 1*kv + 3*prefix
	}
	best := []int{0}
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i] > scores[best[0]]:
			best = []int{i}
		case scores[i] == scores[best[0]]:
			best = append(best, i)
		}
	}
	chosen := best[p.rng.IntN(len(best))]
	for _, h := range hashes { // the scorer's PreRequest: remember where it went
		if p.seen[h] == nil {
			p.seen[h] = map[int]bool{}
		}
		p.seen[h][chosen] = true
	}
	return chosen, scores
}

// TestPickerAcrossReplicas runs three siskin servers on the tiny model
// (one sequence at a time each, so extra requests queue), loads them
// unevenly, and checks from scraped metric values that the picker sends
// a request to the shortest queue, and that a prompt sharing a long
// prefix with an earlier one lands on the replica that served it, whose
// prefix cache then counts the hits.
func TestPickerAcrossReplicas(t *testing.T) {
	const name = "test-model"
	var reps []*testServer
	for range 3 {
		reps = append(reps, startWith(t, setup{eng: engine.Config{MaxNumSeqs: 1, MaxNumBatchedTokens: 64, KVCacheBytes: 16 << 20}},
			"llm", "tiny", "models", "spark2_5-tiny-f32.gguf"))
	}
	scrapeAll := func() []endpointMetrics {
		var ms []endpointMetrics
		for _, r := range reps {
			ms = append(ms, scrape(t, r.URL))
		}
		return ms
	}
	for i, m := range scrapeAll() {
		if m.blockSize != engine.BlockSize || m.numBlocks <= 0 || m.maxLoRA != 0 {
			t.Errorf("replica %d: cache_config_info block_size %d num_gpu_blocks %d, lora max_lora %d", i, m.blockSize, m.numBlocks, m.maxLoRA)
		}
	}

	// Mixed load: long streams that ignore EOS, 3, 1 and 2 on the three
	// replicas, so their queues hold 2, 0 and 1 waiting requests.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, n := range []int{3, 1, 2} {
		for range n {
			wg.Go(func() { longStream(ctx, reps[i].URL) })
		}
	}
	want := []endpointMetrics{{waiting: 2, running: 1}, {waiting: 0, running: 1}, {waiting: 1, running: 1}}
	var ms []endpointMetrics
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ms = scrapeAll()
		ok := true
		for i := range ms {
			ok = ok && ms[i].waiting == want[i].waiting && ms[i].running == want[i].running
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("load did not settle: %+v", ms)
		}
	}
	p := newPicker(name)
	chosen, scores := p.pick(ms, "Hello there")
	t.Logf("scraped waiting %v %v %v, kv %.3f %.3f %.3f; scores %.3f -> replica %d",
		ms[0].waiting, ms[1].waiting, ms[2].waiting, ms[0].kvUsage, ms[1].kvUsage, ms[2].kvUsage, scores, chosen)
	for i := range ms {
		if ms[i].waiting < ms[chosen].waiting {
			t.Errorf("picked replica %d (%v waiting) over replica %d (%v waiting)", chosen, ms[chosen].waiting, i, ms[i].waiting)
		}
	}
	if chosen != 1 {
		t.Errorf("picked replica %d, want 1 (the empty queue)", chosen)
	}
	cancel()
	wg.Wait()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		idle := true
		for _, m := range scrapeAll() {
			idle = idle && m.running == 0 && m.waiting == 0
		}
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replicas did not go idle after the load was cancelled")
		}
	}

	// A shared prefix: the first prompt goes wherever the scores tie; the
	// second, sharing its first 12 blocks (of 64 characters: siskin's
	// block_size 16 times 4), must follow it, and only that replica's
	// prefix cache reports hits for it.
	prefix := strings.Repeat("The quick brown fox jumps over the lazy dog near the river bank. ", 12)
	first, _ := p.pick(scrapeAll(), prefix+"What did the fox do?")
	complete(t, reps[first].URL, prefix+"What did the fox do?")
	before := scrapeAll()
	second, scores := p.pick(before, prefix+"Where was the dog?")
	t.Logf("prefix: first on replica %d, second scores %.3f -> replica %d", first, scores, second)
	if second != first {
		t.Fatalf("the shared prefix went to replica %d, its cache is on replica %d", second, first)
	}
	complete(t, reps[second].URL, prefix+"Where was the dog?")
	after := scrapeAll()
	for i := range after {
		hits := after[i].prefixHits - before[i].prefixHits
		switch {
		case i == second && hits < 8*float64(engine.BlockSize):
			t.Errorf("replica %d served the shared prefix but its cache hit only %v tokens", i, hits)
		case i != second && hits != 0:
			t.Errorf("replica %d got %v prefix hits without serving the request", i, hits)
		}
		t.Logf("replica %d: prefix cache hits +%v of +%v queried tokens", i, hits, after[i].prefixQueries-before[i].prefixQueries)
	}
}

// longStream runs a streaming completion that ignores EOS until ctx ends.
func longStream(ctx context.Context, url string) {
	body := `{"prompt": "Once upon a time", "max_tokens": 1500, "ignore_eos": true, "stream": true}`
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func complete(t *testing.T, url, prompt string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 4, "temperature": 0})
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
