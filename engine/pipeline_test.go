package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/sample"
)

// frameStage is a real second stage: it turns each group of k tokens into
// a frame of dim floats, a deterministic function of the tokens and of a
// value each item carries from frame to frame. A step consumes at most k
// input events of an item and emits at most one frame (plus the end).
type frameStage struct {
	k, dim int
	limits StageLimits
	// onStep, when set, runs at the end of every step on the loop.
	onStep func(batch []*Item)

	mu, relMu sync.Mutex
	batches   []int                  // items per step
	maxQueue  int                    // the longest input queue seen
	whileUp   int                    // frames emitted while the LLM item was still live
	frames    int                    // frames emitted
	tokens    map[int][]sample.Token // by request id: the tokens received
	released  map[int]bool           // by request id
	startedAt map[int]int            // by request id: frames emitted by then
	failAfter map[int]int            // by request id: fail after this many frames
}

// frameParams is a request's Params for the pipeline tests.
type frameParams struct {
	id    int
	limit int // the energy stage ends the request after this many outputs
}

type frameState struct {
	id      int
	pending []int
	carry   float32
	frames  int
}

func newFrameStage(k, dim int, lim StageLimits) *frameStage {
	return &frameStage{k: k, dim: dim, limits: lim, tokens: map[int][]sample.Token{}, released: map[int]bool{}, failAfter: map[int]int{}}
}

func (f *frameStage) Name() string        { return "frames" }
func (f *frameStage) Limits() StageLimits { return f.limits }

func (f *frameStage) Reserve(r *Request) (int64, error) {
	if _, ok := r.Params.(frameParams); !ok {
		return 0, errors.New("frames: no frame params")
	}
	frames := (r.MaxTokens + f.k - 1) / f.k
	return int64(frames*f.dim*4 + f.k*8), nil
}

func (f *frameStage) Start(it *Item) error {
	it.State = &frameState{id: it.Request().Params.(frameParams).id, pending: make([]int, 0, f.k)}
	return nil
}

func (f *frameStage) Release(it *Item) {
	// Release runs inside Step when an item ends there: f.mu is held.
	f.relMu.Lock()
	f.released[it.State.(*frameState).id] = true
	f.relMu.Unlock()
}

// frame is the deterministic function from k tokens and the carried value.
func frame(tokens []int, carry float32, dim int) []float32 {
	out := make([]float32, dim)
	for d := range out {
		var acc float64
		for j, t := range tokens {
			acc += float64(t) * float64(d+1) / float64(j+1)
		}
		out[d] = float32(math.Sin(acc)) + carry
	}
	return out
}

func (f *frameStage) Step(batch []*Item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, len(batch))
	for _, it := range batch {
		s := it.State.(*frameState)
		in := it.Input()
		f.maxQueue = max(f.maxQueue, len(in))
		n := 0
		var end FinishReason
		for n < len(in) && n < f.k && end == "" {
			ev := in[n]
			n++
			if ev.Finish != FinishStop {
				s.pending = append(s.pending, ev.Token.ID)
				f.tokens[s.id] = append(f.tokens[s.id], ev.Token)
			}
			end = ev.Finish
			if len(s.pending) == f.k {
				break
			}
		}
		it.Consume(n)
		if len(s.pending) == f.k || end != "" && len(s.pending) > 0 {
			fr := frame(s.pending, s.carry, f.dim)
			s.carry, s.pending = fr[0], s.pending[:0]
			s.frames++
			f.frames++
			if !it.r.items[it.stage-1].done {
				f.whileUp++
			}
			if lim, ok := f.failAfter[s.id]; ok && s.frames > lim {
				it.Fail(fmt.Errorf("frames: request %d failed on purpose", s.id))
				continue
			}
			it.Emit(Event{Data: fr})
		}
		if end != "" {
			it.Emit(Event{Finish: end})
		}
	}
	if f.onStep != nil {
		f.onStep(batch)
	}
}

// expectFrames is what the frame stage makes of a token stream.
func expectFrames(toks []sample.Token, k, dim int) [][]float32 {
	var out [][]float32
	var carry float32
	for i := 0; i < len(toks); i += k {
		ids := make([]int, 0, k)
		for _, t := range toks[i:min(len(toks), i+k)] {
			ids = append(ids, t.ID)
		}
		fr := frame(ids, carry, dim)
		carry = fr[0]
		out = append(out, fr)
	}
	return out
}

// collectFrames reads a pipeline stream to its end.
func collectFrames(ch <-chan Event) (frames [][]float32, why FinishReason, err error) {
	for ev := range ch {
		if ev.Data != nil {
			frames = append(frames, ev.Data.([]float32))
		}
		if ev.Finish != "" || ev.Err != nil {
			return frames, ev.Finish, ev.Err
		}
	}
	return frames, "", errors.New("stream closed without an end")
}

func llmOnly(t *testing.T, i, maxTokens int) []sample.Token {
	t.Helper()
	e := New(tinySpark(t), Config{})
	defer e.Close()
	p := prompt(10+7*i, i)
	ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: maxTokens, Sampler: sampler(t, 0.8, uint64(100+i), p)})
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := collect(t, ch)
	return toks
}

func pipeRequest(t *testing.T, i, maxTokens int) Request {
	p := prompt(10+7*i, i)
	return Request{Prompt: p, MaxTokens: maxTokens, Sampler: sampler(t, 0.8, uint64(100+i), p), Params: frameParams{id: i}}
}

func sameTokens(t *testing.T, what string, got, want []sample.Token) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tokens, want %d", what, len(got), len(want))
	}
	for j := range want {
		a, b := want[j], got[j]
		if a.ID != b.ID || a.Logprob != b.Logprob || a.Rank != b.Rank || len(a.Top) != len(b.Top) {
			t.Fatalf("%s: token %d: %+v, want %+v", what, j, b, a)
		}
		for k := range a.Top {
			if a.Top[k] != b.Top[k] {
				t.Fatalf("%s: token %d top %d: %+v, want %+v", what, j, k, b.Top[k], a.Top[k])
			}
		}
	}
}

func sameFrames(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d", what, len(got), len(want))
	}
	for i := range want {
		for d := range want[i] {
			if got[i][d] != want[i][d] {
				t.Fatalf("%s: frame %d[%d] = %v, want %v", what, i, d, got[i][d], want[i][d])
			}
		}
	}
}

func waitIdle(t *testing.T, e *Engine) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := e.Stats()
		idle := s.Running == 0 && s.KVUsedBytes == 0
		for _, st := range s.Stages {
			idle = idle && st.Items == 0 && st.ReservedBytes == 0 && st.Queued == 0
		}
		if idle {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine not idle: %+v", s)
		}
		time.Sleep(time.Millisecond)
	}
}

// Frames stream while the LLM still generates, several requests batch in
// both stages, and the LLM's tokens and logprobs are bit-identical to an
// engine without the second stage.
func TestPipelineStreamsAndBatches(t *testing.T) {
	const k, dim, n, maxTokens = 4, 6, 4, 30
	want := make([][]sample.Token, n)
	for i := range n {
		want[i] = llmOnly(t, i, maxTokens)
	}
	fs := newFrameStage(k, dim, StageLimits{})
	e := NewPipeline(Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 32}, LLMStage(tinySpark(t), 0, 0), fs)
	defer e.Close()
	var wg sync.WaitGroup
	got := make([][][]float32, n)
	for i := range n {
		ch, err := e.Submit(context.Background(), pipeRequest(t, i, maxTokens))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			frames, why, err := collectFrames(ch)
			if err != nil || why != FinishLength {
				t.Errorf("request %d: %v, finish %q", i, err, why)
			}
			got[i] = frames
		})
	}
	wg.Wait()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i := range n {
		sameTokens(t, fmt.Sprintf("request %d", i), fs.tokens[i], want[i])
		sameFrames(t, fmt.Sprintf("request %d", i), got[i], expectFrames(want[i], k, dim))
		if !fs.released[i] {
			t.Errorf("request %d: frame state not released", i)
		}
	}
	// All but the last frame of each request need the LLM to go on.
	if fs.whileUp < fs.frames-n {
		t.Errorf("%d of %d frames made while the LLM was generating", fs.whileUp, fs.frames)
	}
	batched := 0
	for _, b := range fs.batches {
		batched = max(batched, b)
	}
	if batched < 2 {
		t.Errorf("frame stage never batched: %v", fs.batches)
	}
	s := waitIdle(t, e)
	if s.GenerationTokens != n*maxTokens || s.Stages[0].Steps >= n*maxTokens {
		t.Errorf("LLM stage did not batch: %d tokens in %d steps", s.GenerationTokens, s.Stages[0].Steps)
	}
	t.Logf("%d frames, %d while the LLM was generating; frame batches up to %d; stage steps %d, %d", fs.frames, fs.whileUp, batched, s.Stages[0].Steps, s.Stages[1].Steps)
}

// A frame stage that takes one item per step falls behind four LLM
// streams: its bounded queues stall the LLM instead of growing, and the
// tokens are still bit-identical.
func TestPipelineBackpressure(t *testing.T) {
	const k, dim, n, maxTokens, queue = 2, 3, 4, 40, 4
	fs := newFrameStage(k, dim, StageLimits{MaxItems: 1, QueueLen: queue})
	e := NewPipeline(Config{}, LLMStage(tinySpark(t), 0, 0), fs)
	defer e.Close()
	var wg sync.WaitGroup
	got := make([][][]float32, n)
	for i := range n {
		ch, err := e.Submit(context.Background(), pipeRequest(t, i, maxTokens))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			frames, _, err := collectFrames(ch)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			got[i] = frames
		})
	}
	wg.Wait()
	s := waitIdle(t, e)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.maxQueue > queue {
		t.Errorf("queue grew to %d events, the bound is %d", fs.maxQueue, queue)
	}
	if fs.maxQueue < queue {
		t.Errorf("queue never filled (%d of %d): the test did not exercise backpressure", fs.maxQueue, queue)
	}
	for _, b := range fs.batches {
		if b > 1 {
			t.Fatalf("a batch of %d items, the limit is 1", b)
		}
	}
	for i := range n {
		want := llmOnly(t, i, maxTokens)
		sameTokens(t, fmt.Sprintf("request %d", i), fs.tokens[i], want)
		sameFrames(t, fmt.Sprintf("request %d", i), got[i], expectFrames(want, k, dim))
	}
	t.Logf("longest queue %d of %d; stage steps %d, %d", fs.maxQueue, queue, s.Stages[0].Steps, s.Stages[1].Steps)
}

// Cancelling a request mid-pipeline frees its reservations in both stages
// before either stage steps again, and another request is unaffected.
func TestPipelineCancel(t *testing.T) {
	const k, dim, maxTokens = 4, 3, 40
	fs := newFrameStage(k, dim, StageLimits{})
	e := NewPipeline(Config{}, LLMStage(tinySpark(t), 0, 0), fs)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	victim := pipeRequest(t, 0, 1000)
	survivor := pipeRequest(t, 1, maxTokens)
	var llmRes, frameRes int64
	for i, st := range e.stages {
		n, _ := st.Reserve(&survivor)
		if i == 0 {
			llmRes = n
		} else {
			frameRes = n
		}
	}
	var cancelledAt, freedAt int64 = -1, -1
	var freed Stats
	fs.onStep = func(batch []*Item) {
		s := e.Stats()
		for _, it := range batch {
			if st := it.State.(*frameState); st.id == 0 && st.frames == 2 && cancelledAt < 0 {
				cancel()
				cancelledAt = s.Steps
				return
			}
		}
		if cancelledAt >= 0 && freedAt < 0 && s.Stages[0].ReservedBytes == llmRes && s.Stages[1].ReservedBytes == frameRes {
			freedAt, freed = s.Steps, s
		}
	}
	chV, err := e.Submit(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	chS, err := e.Submit(context.Background(), survivor)
	if err != nil {
		t.Fatal(err)
	}
	_, why, err := collectFrames(chV)
	if why != FinishAbort || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request ended %q, %v", why, err)
	}
	frames, why, err := collectFrames(chS)
	if err != nil || why != FinishLength {
		t.Fatalf("survivor: %v, finish %q", err, why)
	}
	want := llmOnly(t, 1, maxTokens)
	sameFrames(t, "survivor", frames, expectFrames(want, k, dim))
	waitIdle(t, e)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.released[0] || !fs.released[1] {
		t.Errorf("frame states released: %v", fs.released)
	}
	// The frame step that cancelled is counted in cancelledAt; the next
	// two steps (the LLM's, then the frame stage's) must see it gone.
	if freedAt < 0 || freedAt > cancelledAt+2 {
		t.Fatalf("cancelled at step %d, reservations freed by step %d", cancelledAt, freedAt)
	}
	if freed.Stages[0].Items != 1 || freed.Stages[1].Items != 1 {
		t.Errorf("items after the cancel: %+v", freed.Stages)
	}
	t.Logf("cancelled in step %d; the frame stage's next step (%d, after one LLM step) sees both reservations freed", cancelledAt, freedAt)
}

// A downstream error fails only its request; the others finish with the
// same frames as alone.
func TestPipelineDownstreamError(t *testing.T) {
	const k, dim, n, maxTokens = 3, 4, 3, 24
	fs := newFrameStage(k, dim, StageLimits{})
	fs.failAfter[1] = 2
	e := NewPipeline(Config{}, LLMStage(tinySpark(t), 0, 0), fs)
	defer e.Close()
	var wg sync.WaitGroup
	got := make([][][]float32, n)
	errs := make([]error, n)
	for i := range n {
		ch, err := e.Submit(context.Background(), pipeRequest(t, i, maxTokens))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { got[i], _, errs[i] = collectFrames(ch) })
	}
	wg.Wait()
	waitIdle(t, e)
	for i := range n {
		if i == 1 {
			if errs[i] == nil || len(got[i]) != 2 {
				t.Errorf("request 1: %d frames, error %v; want 2 frames and the stage's error", len(got[i]), errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		sameFrames(t, fmt.Sprintf("request %d", i), got[i], expectFrames(llmOnly(t, i, maxTokens), k, dim))
	}
}

// A panicking stage fails the requests of that batch, not the engine.
func TestPipelinePanic(t *testing.T) {
	fs := newFrameStage(2, 2, StageLimits{MaxItems: 1})
	fs.onStep = func(batch []*Item) {
		if batch[0].State.(*frameState).id == 0 {
			panic("boom")
		}
	}
	e := NewPipeline(Config{}, LLMStage(tinySpark(t), 0, 0), fs)
	defer e.Close()
	ch0, _ := e.Submit(context.Background(), pipeRequest(t, 0, 8))
	if _, _, err := collectFrames(ch0); err == nil {
		t.Fatal("the panicking request did not fail")
	}
	ch1, _ := e.Submit(context.Background(), pipeRequest(t, 1, 8))
	if _, why, err := collectFrames(ch1); err != nil || why != FinishLength {
		t.Fatalf("the next request: %v, %q", err, why)
	}
	waitIdle(t, e)
}

// A request whose stages together exceed the budget is refused, and a
// stage's own validation error reaches Submit.
func TestPipelineReserve(t *testing.T) {
	m := tinySpark(t)
	fs := newFrameStage(4, 4096, StageLimits{})
	r := pipeRequest(t, 0, 64)
	llm := m.Config().KVBytes(len(r.Prompt) + 64)
	e := NewPipeline(Config{KVCacheBytes: llm + 1000}, LLMStage(m, 0, 0), fs)
	defer e.Close()
	if _, err := e.Submit(context.Background(), r); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the budget with both stages: %v", err)
	}
	r.Params = nil
	if _, err := e.Submit(context.Background(), r); err == nil {
		t.Error("a request without frame params was accepted")
	}
}

// energyStage is a third stage: one value per frame, the frame's energy
// plus the item's running total; a request's limit makes it end early.
type energyStage struct{ released sync.Map }

type energyState struct {
	total float32
	n     int
	limit int
	id    int
}

func (*energyStage) Name() string        { return "energy" }
func (*energyStage) Limits() StageLimits { return StageLimits{MaxItems: 2, QueueLen: 2} }
func (*energyStage) Reserve(r *Request) (int64, error) {
	return 64, nil
}

func (*energyStage) Start(it *Item) error {
	p := it.Request().Params.(frameParams)
	it.State = &energyState{limit: p.limit, id: p.id}
	return nil
}

func (g *energyStage) Release(it *Item) { g.released.Store(it.State.(*energyState).id, true) }

func energy(fr []float32, total float32) float32 {
	for _, x := range fr {
		total += x * x
	}
	return total
}

func (*energyStage) Step(batch []*Item) {
	for _, it := range batch {
		s := it.State.(*energyState)
		ev := it.Input()[0]
		it.Consume(1)
		if ev.Data != nil {
			s.total = energy(ev.Data.([]float32), s.total)
			s.n++
			out := Event{Data: s.total}
			if s.n == s.limit {
				out.Finish = FinishLength
			}
			it.Emit(out)
			if out.Finish != "" {
				continue
			}
		}
		if ev.Finish != "" {
			it.Emit(Event{Finish: ev.Finish})
		}
	}
}

// Three stages stream into each other; a last stage that ends early ends
// the request and releases the stages before it.
func TestPipelineThreeStages(t *testing.T) {
	const k, dim, n, maxTokens = 3, 5, 3, 24
	fs := newFrameStage(k, dim, StageLimits{QueueLen: 3})
	es := &energyStage{}
	e := NewPipeline(Config{}, LLMStage(tinySpark(t), 0, 0), fs, es)
	defer e.Close()
	var wg sync.WaitGroup
	got := make([][]float32, n)
	for i := range n {
		r := pipeRequest(t, i, maxTokens)
		if i == 2 {
			r.MaxTokens = 1000
			r.Params = frameParams{id: i, limit: 2}
		}
		ch, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for ev := range ch {
				if ev.Err != nil {
					t.Errorf("request %d: %v", i, ev.Err)
				}
				if ev.Data != nil {
					got[i] = append(got[i], ev.Data.(float32))
				}
			}
		})
	}
	wg.Wait()
	s := waitIdle(t, e)
	for i := range n {
		toks := llmOnly(t, i, maxTokens)
		var want []float32
		var total float32
		for _, fr := range expectFrames(toks, k, dim) {
			total = energy(fr, total)
			want = append(want, total)
		}
		if i == 2 {
			want = want[:2]
		}
		if len(got[i]) != len(want) {
			t.Fatalf("request %d: %d values, want %d", i, len(got[i]), len(want))
		}
		for j := range want {
			if got[i][j] != want[j] {
				t.Fatalf("request %d value %d: %v, want %v", i, j, got[i][j], want[j])
			}
		}
		if _, ok := es.released.Load(i); !ok {
			t.Errorf("request %d: energy state not released", i)
		}
	}
	// The early end stopped request 2's LLM long before its 1000 tokens.
	if s.GenerationTokens > 2*maxTokens+100 {
		t.Errorf("%d tokens generated", s.GenerationTokens)
	}
}
