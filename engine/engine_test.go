package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/modeltest"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
)

func tinySpark(t testing.TB) model.Model {
	t.Helper()
	l, err := load.Open(testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Model
}

func sampler(t testing.TB, temp float64, seed uint64, prompt []int) Sampler {
	p := sample.Defaults()
	p.Temperature, p.TopP, p.Seed, p.Seeded = temp, 0.95, seed, true
	p.Logprobs, p.TopLogprobs = true, 3
	s, err := sample.NewSequence(p, prompt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func prompt(n, salt int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 3 + (i*37+salt*101)%500
	}
	return ids
}

func collect(t testing.TB, ch <-chan Event) ([]sample.Token, FinishReason) {
	t.Helper()
	var toks []sample.Token
	for ev := range ch {
		if ev.Err != nil {
			t.Fatalf("request failed: %v", ev.Err)
		}
		if ev.Finish != FinishStop {
			toks = append(toks, ev.Token)
		}
		if ev.Finish != "" {
			return toks, ev.Finish
		}
	}
	t.Fatal("stream closed without a finish reason")
	return nil, ""
}

// The engine's greedy output is the plain greedy loop's.
func TestGreedyMatchesDirect(t *testing.T) {
	m := tinySpark(t)
	e := New(m, Config{})
	defer e.Close()
	p := prompt(40, 1)
	ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 20, Sampler: sampler(t, 0, 0, p)})
	if err != nil {
		t.Fatal(err)
	}
	toks, why := collect(t, ch)
	want, _ := modeltest.Greedy(t, m, p, 20)
	if why != FinishLength || len(toks) != 20 {
		t.Fatalf("finish %q after %d tokens", why, len(toks))
	}
	for i := range want {
		if toks[i].ID != want[i] {
			t.Fatalf("token %d: %d, want %d", i, toks[i].ID, want[i])
		}
	}
}

// A seeded request gives bit-identical tokens and logprobs alone and
// among 7 others in continuous batches with chunked prefill.
func TestBatchInvariance(t *testing.T) {
	m := tinySpark(t)
	run := func(e *Engine, i int) []sample.Token {
		p := prompt(20+13*i, i)
		ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 24, Sampler: sampler(t, 0.8, uint64(1000+i), p)})
		if err != nil {
			t.Error(err)
			return nil
		}
		toks, _ := collect(t, ch)
		return toks
	}
	e := checkBatchInvariant(t, m, run, 3)
	if s := e.Stats(); s.Steps == 0 || s.GenerationTokens != 8*24 {
		t.Errorf("stats %+v", s)
	}
}

// checkBatchInvariant runs request i alone, then requests 0-7 together in
// continuous batches with chunked prefill, and fails unless request i's
// tokens, logprobs, ranks and top logprobs are bit-identical. It returns
// the batching engine (closed by the test's cleanup) for its stats.
func checkBatchInvariant(t *testing.T, m model.Model, run func(*Engine, int) []sample.Token, i int) *Engine {
	t.Helper()
	alone := New(m, Config{})
	want := run(alone, i)
	alone.Close()
	e := New(m, Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 32})
	t.Cleanup(e.Close)
	var wg sync.WaitGroup
	got := make([][]sample.Token, 8)
	for r := range 8 {
		wg.Go(func() { got[r] = run(e, r) })
	}
	wg.Wait()
	if len(got[i]) != len(want) {
		t.Fatalf("%d tokens among others, %d alone", len(got[i]), len(want))
	}
	for j := range want {
		a, b := want[j], got[i][j]
		if a.ID != b.ID || a.Logprob != b.Logprob || a.Rank != b.Rank || len(a.Top) != len(b.Top) {
			t.Fatalf("token %d: alone %+v, batched %+v", j, a, b)
		}
		for k := range a.Top {
			if a.Top[k] != b.Top[k] {
				t.Fatalf("token %d top %d: alone %+v, batched %+v", j, k, a.Top[k], b.Top[k])
			}
		}
	}
	return e
}

// A long prompt is prefilled in chunks while another stream keeps decoding.
func TestChunkedPrefillInterleaves(t *testing.T) {
	m := tinySpark(t)
	e := New(m, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 8})
	defer e.Close()
	short := prompt(8, 1)
	chShort, _ := e.Submit(context.Background(), Request{Prompt: short, MaxTokens: 30, Sampler: sampler(t, 0, 0, short)})
	<-chShort // decoding has started
	long := prompt(400, 2)
	chLong, _ := e.Submit(context.Background(), Request{Prompt: long, MaxTokens: 1, Sampler: sampler(t, 0, 0, long)})
	// The 400-token prompt needs 57 steps of 7 tokens; the short stream
	// must finish its 29 remaining tokens without waiting for all of them.
	shortDone := make(chan time.Time, 1)
	go func() { collect(t, chShort); shortDone <- time.Now() }()
	collect(t, chLong)
	longDone := time.Now()
	if sd := <-shortDone; sd.After(longDone) {
		t.Errorf("short stream finished after the long prompt's prefill: decode was stalled")
	}
}

func TestKVBudget(t *testing.T) {
	m := tinySpark(t)
	c := m.Config()
	p := prompt(30, 1)
	one := c.KVBytes(len(p) + 10)
	e := New(m, Config{KVCacheBytes: one + one/2})
	defer e.Close()
	if _, err := e.Submit(context.Background(), Request{Prompt: prompt(3000, 1), MaxTokens: 10, Sampler: sampler(t, 0, 0, nil)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized request: %v", err)
	}
	var chans []<-chan Event
	for i := range 3 {
		ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 10, Sampler: sampler(t, 0, uint64(i), p)})
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	for _, ch := range chans {
		for ev := range ch {
			if s := e.Stats(); s.Running > 1 || s.KVUsedBytes > s.KVBytes {
				t.Fatalf("budget for one request but %d running, %d of %d bytes", s.Running, s.KVUsedBytes, s.KVBytes)
			}
			_ = ev
		}
	}
}

func TestCancel(t *testing.T) {
	m := tinySpark(t)
	e := New(m, Config{})
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p := prompt(10, 1)
	ch, _ := e.Submit(ctx, Request{Prompt: p, MaxTokens: 1000, Sampler: sampler(t, 0.7, 1, p)})
	<-ch
	<-ch
	cancel()
	var last Event
	for ev := range ch {
		last = ev
	}
	if last.Finish != FinishAbort {
		t.Errorf("last event %+v, want abort", last)
	}
	deadline := time.Now().Add(2 * time.Second)
	for e.Stats().Running != 0 || e.Stats().KVUsedBytes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("cancelled request still running: %+v", e.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// A second request that repeats the first one's prompt and output plus a
// new turn restores the shared blocks instead of recomputing them, and
// its tokens are the same as without the cache.
func TestPrefixCache(t *testing.T) {
	m := tinySpark(t)
	e := New(m, Config{})
	defer e.Close()
	p1 := prompt(50, 1)
	ch, _ := e.Submit(context.Background(), Request{Prompt: p1, MaxTokens: 20, Sampler: sampler(t, 0, 0, p1)})
	toks, _ := collect(t, ch)
	p2 := append([]int(nil), p1...)
	for _, tk := range toks {
		p2 = append(p2, tk.ID)
	}
	p2 = append(p2, prompt(9, 7)...)
	ch, _ = e.Submit(context.Background(), Request{Prompt: p2, MaxTokens: 10, Sampler: sampler(t, 0, 0, p2)})
	first := <-ch
	// 50 + 20 fed tokens (the last generated one is never fed) = 69 in
	// cache: 4 full blocks = 64 tokens.
	if first.CachedTokens != 64 {
		t.Errorf("cached tokens %d, want 64", first.CachedTokens)
	}
	rest, _ := collect(t, ch)
	got := append([]sample.Token{first.Token}, rest...)
	want, _ := modeltest.Greedy(t, m, p2, 10)
	for i := range want {
		if got[i].ID != want[i] {
			t.Fatalf("token %d: %d with the prefix cache, %d without", i, got[i].ID, want[i])
		}
	}
	if s := e.Stats(); s.PrefixHits != 64 || s.PrefixQueries != int64(len(p1)+len(p2)) {
		t.Errorf("prefix stats %+v", s)
	}
	// Another salt does not see these blocks.
	ch, _ = e.Submit(context.Background(), Request{Prompt: p2, MaxTokens: 1, Sampler: sampler(t, 0, 0, p2), CacheSalt: "other"})
	if ev := <-ch; ev.CachedTokens != 0 {
		t.Errorf("salted request got %d cached tokens", ev.CachedTokens)
	}
	for range ch {
	}
}

// Under a budget too small for the cache, blocks are evicted rather than
// blocking requests.
func TestPrefixCacheEviction(t *testing.T) {
	m := tinySpark(t)
	p := prompt(60, 3)
	budget := m.Config().KVBytes(len(p) + 5)
	e := New(m, Config{KVCacheBytes: budget})
	defer e.Close()
	for i := range 4 {
		pi := prompt(60, 3+i)
		ch, err := e.Submit(context.Background(), Request{Prompt: pi, MaxTokens: 5, Sampler: sampler(t, 0, 0, pi)})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, ch)
		for e.Stats().Running != 0 {
			time.Sleep(time.Millisecond)
		}
		if s := e.Stats(); s.PrefixCacheBytes+s.SpareCacheBytes+s.KVUsedBytes > budget || s.PrefixCacheBytes == 0 {
			t.Fatalf("cache %d + spares %d + running %d against the budget %d", s.PrefixCacheBytes, s.SpareCacheBytes, s.KVUsedBytes, budget)
		}
	}
}

// An embedding request returns the last prompt token's final normed
// hidden state (PoolLast) or the mean over the prompt (PoolMean), the
// same however the prompt is chunked; the head applied to the last
// token's state gives the logits a plain forward pass gives (exactly:
// the same norm and matrix product), and generation keeps running
// beside embedding requests.
func TestEmbed(t *testing.T) {
	m := tinySpark(t)
	c := m.Config()
	p := prompt(40, 7)
	direct, err := m.ForwardBatch([]model.Seq{{Cache: m.NewCache(), Tokens: p, Hidden: true, AllLogits: true}})
	if err != nil {
		t.Fatal(err)
	}
	rows := direct[0]
	last := rows[len(rows)-c.Hidden:]
	mean := make([]float32, c.Hidden)
	for i := 0; i < len(p); i++ {
		for j := range mean {
			mean[j] += rows[i*c.Hidden+j]
		}
	}
	for j := range mean {
		mean[j] /= float32(len(p))
	}
	logits, err := model.Forward(m, m.NewCache(), p, false)
	if err != nil {
		t.Fatal(err)
	}
	lastOnly, err := m.ForwardBatch([]model.Seq{{Cache: m.NewCache(), Tokens: p, Hidden: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lastOnly[0]) != c.Hidden || len(logits) != c.Vocab {
		t.Fatalf("hidden %d (want %d), logits %d", len(lastOnly[0]), c.Hidden, len(logits))
	}
	for j, v := range lastOnly[0] {
		if v != last[j] {
			t.Fatalf("last row alone [%d] = %v, with all rows %v", j, v, last[j])
		}
	}
	for _, chunk := range []int{64, 7} {
		e := New(m, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: chunk, KVCacheBytes: 32 << 20})
		gen, err := e.Submit(context.Background(), Request{Prompt: prompt(30, 1), MaxTokens: 8, Sampler: sampler(t, 0, 1, prompt(30, 1))})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			pool Pooling
			want []float32
		}{{PoolLast, last}, {PoolMean, mean}} {
			ch, err := e.Submit(context.Background(), Request{Prompt: p, Embed: tc.pool})
			if err != nil {
				t.Fatal(err)
			}
			ev := <-ch
			got, _ := ev.Data.([]float32)
			if ev.Err != nil || ev.Finish != FinishStop || len(got) != c.Hidden {
				t.Fatalf("chunk %d pool %d: event %+v", chunk, tc.pool, ev)
			}
			// Tolerance: the same rows summed in the same order (mean) or
			// the same row; chunking may only change which rows share a
			// matrix product, which the kernels compute row by row.
			for j := range got {
				if d := got[j] - tc.want[j]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("chunk %d pool %d: [%d] = %v, want %v", chunk, tc.pool, j, got[j], tc.want[j])
				}
			}
		}
		if toks, _ := collect(t, gen); len(toks) == 0 {
			t.Errorf("generation beside embeddings produced nothing")
		}
		e.Close()
	}
}

// An ended sequence's cache, emptied, serves the next sequence of no
// larger reservation (kv.Cache.Reset), whose tokens are those of a fresh
// cache: prompts of 60 and 30 generated tokens pass the tiny Spark's
// sliding window, so its rings wrap in the reused memory.
func TestSpareCaches(t *testing.T) {
	m := tinySpark(t)
	e := New(m, Config{})
	defer e.Close()
	for i := range 3 {
		p := prompt(60, 20+i)
		ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 30, Sampler: sampler(t, 0, 0, p)})
		if err != nil {
			t.Fatal(err)
		}
		toks, _ := collect(t, ch)
		want, _ := modeltest.Greedy(t, m, p, 30)
		for j := range want {
			if toks[j].ID != want[j] {
				t.Fatalf("request %d token %d: %d, want %d", i, j, toks[j].ID, want[j])
			}
		}
		for e.Stats().Running != 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if n := e.Stats().SpareHits; n != 2 {
		t.Errorf("%d requests began in a spare cache, want 2", n)
	}
}
