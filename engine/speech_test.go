package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// ttsCase is a golden talker case (tts/talker/golden/tiny-cv-eq, made by
// the official Qwen3-TTS code in float64): its request and its codes.
type ttsCase struct {
	name    string
	Request struct {
		InputIDs     []int  `json:"input_ids"`
		Speaker      string `json:"speaker"`
		Language     string `json:"language"`
		NonStreaming bool   `json:"non_streaming_mode"`
	} `json:"request"`
	Sampling struct {
		RepetitionPenalty float64 `json:"repetition_penalty"`
	} `json:"sampling"`
	Codes   [][]int `json:"codes"`
	NFrames int     `json:"n_frames"`
}

func loadTTSCases(t *testing.T) (*qwen3tts.Model, []*ttsCase) {
	t.Helper()
	m, err := qwen3tts.Load(testdata.Path(t, "tts", "talker", "ckpt", "tiny-cv-eq-bf16"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	dir := testdata.Path(t, "tts", "talker", "golden", "tiny-cv-eq")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cases []*ttsCase
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "cv_") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		c := &ttsCase{name: e.Name()}
		if err := json.Unmarshal(raw, c); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		cases = append(cases, c)
	}
	if len(cases) != 7 {
		t.Fatalf("%d cv_* cases in %s, want 7", len(cases), dir)
	}
	return m, cases
}

// speech is the case's request: greedy talker and predictor, the case's
// repetition penalty and frame count, codes out.
func (c *ttsCase) speech(m *qwen3tts.Model) Request {
	u := m.Cfg.NewRequest(c.Request.InputIDs, qwen3tts.Voice{Speaker: c.Request.Speaker, Language: c.Request.Language, NonStreaming: c.Request.NonStreaming})
	u.Talker.Greedy, u.Predictor.Greedy = true, true
	u.RepetitionPenalty = c.Sampling.RepetitionPenalty
	u.MaxFrames = c.NFrames
	return Request{Prompt: u.IDs, MaxTokens: u.MaxFrames, Params: &Speech{Utterance: u, Codes: true}}
}

// collectFrames reads a codes-mode stream to its end.
func collectCodes(t *testing.T, ch <-chan Event) ([][]int, FinishReason) {
	var frames [][]int
	for ev := range ch {
		if ev.Err != nil {
			t.Error(ev.Err)
			return nil, ev.Finish
		}
		if f, ok := ev.Data.([]int); ok {
			frames = append(frames, f)
		}
		if ev.Finish != "" {
			return frames, ev.Finish
		}
	}
	t.Error("stream closed without a finish")
	return nil, ""
}

// TestSpeechPipelineGolden: every cv_* case through the talker and codec
// stages in codes mode gives the golden codes exactly (greedy, float
// weights, float32 KV), alone and all at once (continuous batching).
func TestSpeechPipelineGolden(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 8}, m, nil)
	defer e.Close()
	check := func(c *ttsCase, frames [][]int) {
		if !slices.EqualFunc(frames, c.Codes, slices.Equal) {
			t.Errorf("%s: %d frames differ from the golden %d", c.name, len(frames), len(c.Codes))
		}
	}
	for _, c := range cases {
		ch, err := e.Submit(context.Background(), c.speech(m))
		if err != nil {
			t.Fatal(err)
		}
		frames, _ := collectCodes(t, ch)
		check(c, frames)
	}
	var wg sync.WaitGroup
	results := make([][][]int, len(cases))
	for i, c := range cases {
		// Started a little apart so utterances join a running batch.
		ch, err := e.Submit(context.Background(), c.speech(m))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { results[i], _ = collectCodes(t, ch) })
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	for i, c := range cases {
		check(c, results[i])
	}
	// Submitted together they share talker steps: continuous batching
	// takes far fewer talker-stage steps than the frames made.
	before, frames := e.Stats().Stages[0].Steps, 0
	var chans []<-chan Event
	for _, c := range cases {
		ch, err := e.Submit(context.Background(), c.speech(m))
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	for i, ch := range chans {
		got, _ := collectCodes(t, ch)
		check(cases[i], got)
		frames += len(got) + 1 // the last talker step makes no frame
	}
	if steps := e.Stats().Stages[0].Steps - before; steps > int64(frames/2) {
		t.Errorf("%d talker steps for %d talker positions of 7 utterances submitted together: not batched", steps, frames)
	}
	if s := e.Stats(); s.Running != 0 || s.KVUsedBytes != 0 {
		t.Errorf("after all: %d running, %d bytes reserved", s.Running, s.KVUsedBytes)
	}
}

// TestSpeechCancel: a cancelled utterance frees its reservations and the
// running count within a step; the others finish with their codes.
func TestSpeechCancel(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 8}, m, nil)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.Submit(ctx, cases[0].speech(m))
	if err != nil {
		t.Fatal(err)
	}
	<-ch // the first frame
	cancel()
	for ev := range ch {
		_ = ev
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().Running != 0 || e.Stats().KVUsedBytes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after cancel: %+v", e.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	ch, err = e.Submit(context.Background(), cases[1].speech(m))
	if err != nil {
		t.Fatal(err)
	}
	if frames, _ := collectCodes(t, ch); !slices.EqualFunc(frames, cases[1].Codes, slices.Equal) {
		t.Errorf("%s after a cancel: codes differ", cases[1].name)
	}
}

// TestSpeechRefused: what can never fit, or is not a speech request, is
// refused at Submit.
func TestSpeechRefused(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 2, KVCacheBytes: 1 << 10}, m, nil)
	defer e.Close()
	if _, err := e.Submit(context.Background(), cases[0].speech(m)); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("over the budget: %v", err)
	}
	r := cases[0].speech(m)
	r.Params.(*Speech).Utterance.MaxFrames = m.Cfg.Talker.ContextLength
	if _, err := e.Submit(context.Background(), r); err == nil {
		t.Error("past the talker context: no error")
	}
	if _, err := e.Submit(context.Background(), Request{}); err == nil {
		t.Error("no Speech params: no error")
	}
	r = cases[0].speech(m)
	r.Params.(*Speech).Codes = false
	if _, err := e.Submit(context.Background(), r); err == nil || !strings.Contains(err.Error(), "codec") {
		t.Errorf("audio without a codec: %v", err)
	}
}

// collectCached reads a codes-mode stream to its end and returns its
// codes and the cached prompt rows its first event reported.
func collectCached(t *testing.T, ch <-chan Event) (frames [][]int, cached int) {
	first := true
	for ev := range ch {
		if first {
			cached, first = ev.CachedTokens, false
		}
		if ev.Err != nil {
			t.Error(ev.Err)
		}
		if f, ok := ev.Data.([]int); ok {
			frames = append(frames, f)
		}
	}
	return frames, cached
}

// TestSpeechConditioningCache: the second request with a case's voice
// and language begins from the first one's conditioning rows (reported
// in CachedTokens and the prefix-cache counters) and still gives the
// golden codes; another voice or another cache salt does not hit.
func TestSpeechConditioningCache(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 4}, m, nil)
	defer e.Close()
	c := cases[0]
	p, err := m.Cfg.BuildPrompt(c.Request.InputIDs, qwen3tts.Voice{Speaker: c.Request.Speaker, Language: c.Request.Language, NonStreaming: c.Request.NonStreaming})
	if err != nil {
		t.Fatal(err)
	}
	run := func(r Request) int {
		ch, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		frames, cached := collectCached(t, ch)
		if !slices.EqualFunc(frames, c.Codes, slices.Equal) {
			t.Errorf("%s (cached %d rows): codes differ from the golden", c.name, cached)
		}
		return cached
	}
	if got := run(c.speech(m)); got != 0 {
		t.Errorf("first request: %d cached rows", got)
	}
	if got := run(c.speech(m)); got != p.Cond {
		t.Errorf("second request: %d cached rows, want the %d conditioning rows", got, p.Cond)
	}
	salted := c.speech(m)
	salted.CacheSalt = "tenant"
	if got := run(salted); got != 0 {
		t.Errorf("another salt: %d cached rows", got)
	}
	s := e.Stats()
	if s.PrefixHits != int64(p.Cond) || s.PrefixQueries != 3*int64(len(p.Text)) || s.PrefixCacheBytes <= 0 {
		t.Errorf("prefix counters: hits %d queries %d bytes %d, want %d, %d, > 0", s.PrefixHits, s.PrefixQueries, s.PrefixCacheBytes, p.Cond, 3*len(p.Text))
	}
	if s.KVUsedBytes != 0 {
		t.Errorf("%d bytes reserved after all", s.KVUsedBytes)
	}
}

// The conditioning cache keeps at most its entry bound and the room it
// is given, least recently used out first.
func TestCondCacheBounds(t *testing.T) {
	m, cases := loadTTSCases(t)
	var conds []*qwen3tts.Conditioning
	for _, c := range cases[:3] {
		r := c.speech(m).Params.(*Speech).Utterance
		u, err := m.Begin(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Step([]*qwen3tts.Utterance{u}); err != nil {
			t.Fatal(err)
		}
		conds = append(conds, u.Conditioning())
	}
	cc := newCondCache()
	cc.max = 2
	big := int64(1 << 30)
	for i, c := range conds {
		cc.put(string(rune('a'+i)), c, big)
	}
	if len(cc.entries) != 2 || cc.get("a") != nil || cc.get("b") == nil || cc.get("c") == nil {
		t.Errorf("entry bound 2: kept %d", len(cc.entries))
	}
	cc.get("b") // c is now the least recently used
	cc.evict(conds[1].Bytes(), cc.max)
	if cc.get("c") != nil || cc.get("b") == nil || cc.bytes != conds[1].Bytes() {
		t.Errorf("byte bound: %d bytes, %d entries", cc.bytes, len(cc.entries))
	}
	cc.put("d", conds[2], conds[2].Bytes()-1)
	if cc.get("d") != nil {
		t.Error("an entry larger than the room was kept")
	}
}

// TestSpeechAdmissionWaits: with a budget for one utterance, a second
// waits (not refused) until the first ends, then runs; the step observer
// sees every part of the talker stage and the codec stage.
func TestSpeechAdmissionWaits(t *testing.T) {
	m, cases := loadTTSCases(t)
	long := cases[0].speech(m)
	long.Params.(*Speech).Utterance.MaxFrames, long.Params.(*Speech).Utterance.IgnoreEOS = 40, true
	one, err := (&talkerStage{m: m}).Reserve(&long)
	if err != nil {
		t.Fatal(err)
	}
	e := NewSpeechPipeline(Config{MaxNumSeqs: 4, KVCacheBytes: one + one/2}, m, nil)
	defer e.Close()
	var mu sync.Mutex
	parts := map[string]int{}
	e.ObserveSteps(func(part string, d time.Duration) {
		mu.Lock()
		parts[part]++
		mu.Unlock()
	})
	// 40 frames fill its channel (16 events) until read: it runs on.
	ch1, err := e.Submit(context.Background(), long)
	if err != nil {
		t.Fatal(err)
	}
	<-ch1
	ch2, err := e.Submit(context.Background(), cases[0].speech(m))
	if err != nil {
		t.Fatalf("a request that fits the budget later: %v", err)
	}
	if s := e.Stats(); s.Waiting != 1 || s.Running != 1 {
		t.Errorf("while the first runs: %d waiting, %d running", s.Waiting, s.Running)
	}
	collectCodes(t, ch1)
	if frames, _ := collectCodes(t, ch2); !slices.EqualFunc(frames, cases[0].Codes, slices.Equal) {
		t.Error("the request that waited: codes differ from the golden")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"talker", "predictor", "sampler", "codec"} {
		if parts[p] == 0 {
			t.Errorf("no %s step observed: %v", p, parts)
		}
	}
}

// TestSpeechSpares: the talker and predictor caches of an ended request
// are kept, within what reservations leave, and the next request runs
// in them with the golden codes.
func TestSpeechSpares(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 4}, m, nil)
	defer e.Close()
	sp := e.stages[0].(*talkerStage).spare
	for i := range 3 {
		c := cases[i%2]
		ch, err := e.Submit(context.Background(), c.speech(m))
		if err != nil {
			t.Fatal(err)
		}
		if frames, _ := collectCodes(t, ch); !slices.EqualFunc(frames, c.Codes, slices.Equal) {
			t.Errorf("request %d (%s): codes differ from the golden", i, c.name)
		}
		// The channel closed after the items' release: the loop is done
		// with the spares.
		if len(sp.mems) != 1 || sp.bytes != sp.mems[0].Bytes() {
			t.Errorf("after request %d: %d spare caches, %d bytes", i, len(sp.mems), sp.bytes)
		}
	}
}

// Spares give way first when a reservation needs their room, then
// cached conditionings; caches larger than twice a reservation are not
// handed out.
func TestSparesFit(t *testing.T) {
	m, cases := loadTTSCases(t)
	var mems []*qwen3tts.Memory
	var conds []*qwen3tts.Conditioning
	for _, c := range cases[:2] {
		u, err := m.Begin(c.speech(m).Params.(*Speech).Utterance)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Step([]*qwen3tts.Utterance{u}); err != nil {
			t.Fatal(err)
		}
		conds = append(conds, u.Conditioning())
		mems = append(mems, u.Free())
	}
	if mems[0] == nil || mems[0].Bytes() <= 0 || mems[1] == nil {
		t.Fatal("no caches from Free")
	}
	budget := mems[0].Bytes() + mems[1].Bytes() + conds[0].Bytes()
	e := &Engine{cfg: Config{KVCacheBytes: budget, MaxNumSeqs: 4}}
	cache := newCondCache()
	ts := &talkerStage{m: m, cache: cache, spare: &spares{cond: cache}}
	ts.attach(e)
	cache.put("a", conds[0], ts.room())
	ts.spare.putMemory(mems[0])
	ts.spare.putMemory(mems[1])
	if len(ts.spare.mems) != 2 || ts.spare.bytes+cache.bytes != budget {
		t.Fatalf("kept %d spares, %d + %d bytes of %d", len(ts.spare.mems), ts.spare.bytes, cache.bytes, budget)
	}
	if got := ts.spare.takeMemory(min(mems[0].Bytes(), mems[1].Bytes()) - 1); got != nil {
		t.Error("handed out caches larger than the limit")
	}
	e.used = mems[0].Bytes() // a reservation: one spare must go
	ts.fit()
	if len(ts.spare.mems) != 1 || len(cache.entries) != 1 || ts.spare.bytes+cache.bytes > budget-e.used {
		t.Errorf("after a reservation: %d spares, %d conditionings, %d bytes in %d", len(ts.spare.mems), len(cache.entries), ts.spare.bytes+cache.bytes, budget-e.used)
	}
	e.used = budget - conds[0].Bytes()/2 // no room for anything
	ts.fit()
	if len(ts.spare.mems) != 0 || len(cache.entries) != 0 || ts.spare.bytes != 0 || cache.bytes != 0 {
		t.Errorf("with no room: %d spares, %d conditionings kept", len(ts.spare.mems), len(cache.entries))
	}
}
