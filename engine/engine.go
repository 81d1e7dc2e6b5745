// Package engine schedules requests through a pipeline of stages in one
// loop of batched steps.
//
// A Stage owns a step function that advances a batch of its items by one
// step. A request has one Item per stage. The first stage's input is the
// Request itself; every later stage's input is the stream of Events the
// stage before it emits, queued on its item. Stages stream into each
// other: a later stage's item is stepped as soon as it has input queued,
// while the earlier one is still running. An event with Finish set ends the
// emitting item; the request ends when its last stage's item ends, and the
// last stage's events are what Submit's channel delivers.
//
// siskin builds two pipelines. New(m, cfg) is one LLM stage (LLMStage):
// continuous batching of decode tokens and chunked prefill within
// MaxNumBatchedTokens, a KV cache per sequence and a hash-chained prefix
// cache. NewSpeechPipeline (speech.go) is a Qwen3-TTS talker stage (talker
// and code predictor, one batched step per frame) feeding a codec stage
// that decodes the frames to audio chunks as they arrive. NewPipeline
// takes any stages.
//
// Memory: each stage's Reserve says the most bytes a request's item may
// hold in it. A request is admitted (in arrival order, at most MaxNumSeqs
// at once) only when the sum over all its stages fits what the budget
// (KVCacheBytes) has left, so an admitted request never waits for memory
// and the pipeline cannot deadlock; each stage's part is freed as soon as
// that stage's item ends, before the next stage or the caller hears of it.
// Prefix-cache blocks live in what reservations leave and are evicted
// first.
//
// Scheduling: each round of the loop admits waiting requests, drops
// cancelled ones, then steps every stage that has ready items once,
// downstream first. Draining later stages before earlier ones refill them
// keeps latency low (a later stage takes up an event the round after it
// is emitted), frees queue room and memory before producers add more, and
// stepping each stage with work once a round means none starves. Inside a
// stage, items take turns when more are ready than StageLimits.MaxItems.
// Backpressure: an item is not stepped while the queue of its request's
// next stage is full (StageLimits.QueueLen), so a fast stage never makes
// a slow one buffer without bound. The last stage's events go to the
// caller's channel (16 events); as for the plain LLM engine, a caller
// must read its events or cancel: a full channel holds the loop until it
// does (skipping such items would split batches).
//
// Cancellation and errors: a cancelled request's items leave every stage
// before that stage's next step, their states are released and their
// reservations freed. Item.Fail, a failed Start or a panicking Step ends
// only the requests involved; every other request goes on.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/sample"
)

// Config bounds what the engine runs at once.
type Config struct {
	// MaxNumSeqs is the most sequences in one step.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the most tokens in one step: decode tokens
	// first, then prompt chunks, so a long prompt is prefilled over several
	// steps while other streams keep decoding.
	MaxNumBatchedTokens int
	// KVCacheBytes is the key/value budget. A request reserves the cache
	// its prompt plus max tokens can need; when the budget is full new
	// requests wait, and one that can never fit is refused.
	KVCacheBytes int64
	// MaxWaiting is how many requests may queue; more are refused with
	// ErrQueueFull.
	MaxWaiting int
}

// ErrQueueFull is returned by Submit when the waiting queue is full.
var ErrQueueFull = errors.New("engine: too many waiting requests")

// ErrTooLarge is returned by Submit when a request can never fit the KV budget.
var ErrTooLarge = errors.New("engine: request needs more KV cache than the whole budget")

// Sampler chooses each next token of one sequence. The engine may call
// the samplers of different requests at the same time (never one sampler
// twice at once), so samplers must not share mutable state.
type Sampler interface {
	Sample(logits []float32) (sample.Token, error)
}

// Request is one generation submitted to the engine.
type Request struct {
	Prompt    []int
	MaxTokens int
	Sampler   Sampler
	// Stop reports tokens that end generation (EOS, stop_token_ids); the
	// stopping token is reported with FinishStop but is not part of the text.
	Stop func(id int) bool
	// CacheSalt keeps this request's prefix-cache entries apart from
	// requests with another salt (vLLM's cache_salt).
	CacheSalt string
	// Params carries what other stages of a pipeline need (a voice, an
	// audio format); each stage reads its own kind.
	Params any
	// Embed, when set, asks for the prompt's embedding instead of
	// generated tokens: the request ends after its prompt with one Event
	// (FinishStop) whose Data is the pooled final hidden state, a
	// []float32 of Config.Hidden, not normalized. MaxTokens and Sampler
	// are not used. Its prompt chunks batch with generation like any
	// other prefill.
	Embed Pooling
	// ScorePrompt asks for the logprob of every prompt token after the
	// first as the model predicts it from those before (vLLM's prompt
	// logprobs, with PromptTop alternatives each), delivered in the
	// request's first event's Prompt. Every prompt token is computed (no
	// prefix-cache hit), and MaxTokens may be 0: the request then ends
	// after its prompt with one event that carries no token.
	ScorePrompt bool
	PromptTop   int
}

// Pooling is how an embedding request's hidden states become one vector.
type Pooling int

const (
	NoEmbed  Pooling = iota // a generation request
	PoolLast                // the last prompt token's hidden state
	PoolMean                // the mean over the prompt's tokens
)

// Event is what a stage emits and a request's stream delivers: a token, a
// value of another kind, or the end.
type Event struct {
	Token sample.Token
	// Data is what a stage emits that is not a token (an audio frame).
	Data   any
	Finish FinishReason // set on the last event
	Err    error        // set when the request failed
	// CachedTokens is how many prompt tokens were served from the prefix
	// cache (set on the first event the caller gets).
	CachedTokens int
	// Prompt is the scored prompt tokens after the first (ScorePrompt),
	// on the request's first event. When MaxTokens is 0 that event is the
	// last, and its Token.ID is NoToken.
	Prompt []sample.Token
}

// NoToken is the Token.ID of an event that carries no generated token.
const NoToken = -1

// Abort is the finish reason of a request cancelled by its caller.
const FinishAbort FinishReason = "abort"

// Stats is a snapshot of the engine's state and counters.
type Stats struct {
	Running, Waiting     int
	KVUsedBytes, KVBytes int64 // reserved by all stages, and the budget
	PrefixQueries        int64 // prompt tokens looked up in the prefix cache
	PrefixHits           int64 // of those, tokens found
	PrefixCacheBytes     int64 // held by cached prefix blocks
	PromptTokens         int64
	GenerationTokens     int64
	SpareHits            int64 // requests (text or speech) begun in the caches of ended ones
	SpareCacheBytes      int64 // held by those caches (and codec streams) until then
	Steps                int64 // steps of all stages
	Stages               []StageStats
}

// StageStats is one stage's part of Stats.
type StageStats struct {
	Name          string
	Items         int   // live items
	Queued        int   // events queued into its items
	ReservedBytes int64 // held by its items
	Steps         int64
}

// request is one submitted request's state in the loop.
type request struct {
	e        *Engine
	req      Request
	ctx      context.Context
	out      chan Event
	items    []Item // one per stage
	reserved int64  // sum of the items' reservations
	cached   int    // prompt tokens from the prefix cache, for the first event
	sent     bool   // an event has reached the caller
	done     bool
}

type stageStats struct {
	items, queued, reserved, steps atomic.Int64
}

// Engine runs requests through its stages in a loop of batched steps.
type Engine struct {
	cfg    Config
	stages []Stage
	limits []StageLimits
	llms   []*llmStage

	mu      sync.Mutex
	waiting []*request
	wake    chan struct{}
	closed  bool

	// Owned by the loop goroutine.
	running  []*request // in arrival order; done ones until the next sweep
	live     int        // running requests not done
	used     int64      // bytes reserved by live items
	finished bool       // a request ended since the last sweep
	ready    []*Item    // scratch: the items a stage could step
	batch    []*Item    // scratch: the batch given to a stage
	turn     []int      // per stage: where the next turn starts
	stall    *time.Timer

	stats struct {
		running, waiting               atomic.Int64
		kvUsed                         atomic.Int64
		prefixQueries, prefixHits      atomic.Int64
		prefixBytes                    atomic.Int64
		promptTokens, generationTokens atomic.Int64
		spareHits, spareBytes          atomic.Int64
	}
	stageStats []stageStats
	observer   atomic.Pointer[func(part string, d time.Duration)]
	done       chan struct{}
}

// New starts an engine on m: a pipeline of one LLM stage.
func New(m model.Model, cfg Config) *Engine {
	return NewPipeline(cfg, LLMStage(m, 0, 0))
}

// NewPipeline starts an engine whose requests flow through stages in
// order.
func NewPipeline(cfg Config, stages ...Stage) *Engine {
	if len(stages) == 0 {
		panic("engine: a pipeline needs a stage")
	}
	if cfg.MaxNumSeqs <= 0 {
		cfg.MaxNumSeqs = 8
	}
	if cfg.MaxNumBatchedTokens <= 0 {
		cfg.MaxNumBatchedTokens = 512
	}
	if cfg.KVCacheBytes <= 0 {
		cfg.KVCacheBytes = 1 << 30
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = 256
	}
	e := &Engine{
		cfg: cfg, stages: stages, wake: make(chan struct{}, 1), done: make(chan struct{}),
		turn: make([]int, len(stages)), stageStats: make([]stageStats, len(stages)),
	}
	for _, st := range stages {
		if l, ok := st.(*llmStage); ok {
			e.llms = append(e.llms, l)
		}
		if a, ok := st.(interface{ attach(*Engine) }); ok {
			a.attach(e)
		}
		lim := st.Limits()
		if lim.MaxItems <= 0 {
			lim.MaxItems = cfg.MaxNumSeqs
		}
		if lim.QueueLen <= 0 {
			lim.QueueLen = 16
		}
		e.limits = append(e.limits, lim)
	}
	e.stall = time.NewTimer(time.Hour)
	e.stall.Stop()
	go e.loop()
	return e
}

// Model returns the model of the engine's first LLM stage, or nil.
func (e *Engine) Model() model.Model {
	if len(e.llms) == 0 {
		return nil
	}
	return e.llms[0].m
}

// Config returns the engine's limits.
func (e *Engine) Config() Config { return e.cfg }

// Submit queues a request. Events arrive on the returned channel, which is
// closed after the last one; cancelling ctx aborts the request and frees
// its memory in every stage within one step.
func (e *Engine) Submit(ctx context.Context, r Request) (<-chan Event, error) {
	q := &request{e: e, req: r, ctx: ctx, out: make(chan Event, 16), items: make([]Item, len(e.stages))}
	for i, st := range e.stages {
		n, err := st.Reserve(&q.req)
		if err != nil {
			return nil, err
		}
		q.items[i] = Item{r: q, stage: i, reserved: n}
		q.reserved += n
	}
	if q.reserved > e.cfg.KVCacheBytes {
		return nil, fmt.Errorf("%w: %d prompt + %d new tokens need %d bytes, the budget is %d", ErrTooLarge, len(r.Prompt), r.MaxTokens, q.reserved, e.cfg.KVCacheBytes)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("engine: shutting down")
	}
	if len(e.waiting) >= e.cfg.MaxWaiting {
		return nil, ErrQueueFull
	}
	e.waiting = append(e.waiting, q)
	e.stats.waiting.Store(int64(len(e.waiting)))
	e.signal()
	return q.out, nil
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Close stops accepting requests, aborts what is queued or running, and
// waits for the loop to end.
func (e *Engine) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		e.signal()
	}
	e.mu.Unlock()
	<-e.done
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	s := Stats{
		Running:          int(e.stats.running.Load()),
		Waiting:          int(e.stats.waiting.Load()),
		KVUsedBytes:      e.stats.kvUsed.Load(),
		KVBytes:          e.cfg.KVCacheBytes,
		PrefixQueries:    e.stats.prefixQueries.Load(),
		PrefixHits:       e.stats.prefixHits.Load(),
		PrefixCacheBytes: e.stats.prefixBytes.Load(),
		PromptTokens:     e.stats.promptTokens.Load(),
		GenerationTokens: e.stats.generationTokens.Load(),
		SpareHits:        e.stats.spareHits.Load(),
		SpareCacheBytes:  e.stats.spareBytes.Load(),
		Stages:           make([]StageStats, len(e.stages)),
	}
	for i, st := range e.stages {
		ss := &e.stageStats[i]
		s.Stages[i] = StageStats{
			Name: st.Name(), Items: int(ss.items.Load()), Queued: int(ss.queued.Load()),
			ReservedBytes: ss.reserved.Load(), Steps: ss.steps.Load(),
		}
		s.Steps += s.Stages[i].Steps
	}
	return s
}

func (e *Engine) loop() {
	defer close(e.done)
	for {
		e.mu.Lock()
		closed := e.closed
		e.mu.Unlock()
		if closed {
			e.abortAll()
			return
		}
		e.admit()
		e.sweep()
		if e.live == 0 {
			e.idle()
			continue
		}
		for si := len(e.stages) - 1; si >= 0; si-- {
			e.stepStage(si)
		}
		e.sweep()
	}
}

// idle waits for a new request, or for a waiting one's cancellation.
func (e *Engine) idle() {
	e.mu.Lock()
	n := len(e.waiting)
	e.mu.Unlock()
	if n == 0 {
		<-e.wake
		return
	}
	// Requests wait for budget that only running requests free; with none
	// running that cannot happen, so this is only reached transiently.
	e.wait()
}

// wait sleeps until a request arrives or a short while passes: readers
// freeing room in their channels do not signal the loop.
func (e *Engine) wait() {
	e.stall.Reset(time.Millisecond)
	select {
	case <-e.wake:
		e.stall.Stop() // since Go 1.23 no stale tick survives Stop
	case <-e.stall.C:
	}
}

// admit moves waiting requests into the running set while sequences and
// the byte budget allow, in arrival order.
func (e *Engine) admit() {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.waiting[:0]
	for i, r := range e.waiting {
		if err := r.ctx.Err(); err != nil {
			e.finish(r, FinishAbort, err)
			continue
		}
		if e.live < e.cfg.MaxNumSeqs && e.used+r.reserved <= e.cfg.KVCacheBytes && len(kept) == 0 {
			e.start(r)
			continue
		}
		kept = append(kept, e.waiting[i])
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
	e.stats.waiting.Store(int64(len(e.waiting)))
}

// start reserves a request's memory in every stage and starts its items.
func (e *Engine) start(r *request) {
	e.live++
	e.running = append(e.running, r)
	for i := range r.items {
		it := &r.items[i]
		e.used += it.reserved
		e.stageStats[i].reserved.Add(it.reserved)
		e.stageStats[i].items.Add(1)
	}
	e.stats.kvUsed.Store(e.used)
	e.stats.running.Store(int64(e.live))
	for i := range r.items {
		it := &r.items[i]
		if err := e.safeStart(it); err != nil {
			e.fail(r, "", err)
			return
		}
		it.started = true
	}
}

func (e *Engine) safeStart(it *Item) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine: stage %s: start panicked: %v", e.stages[it.stage].Name(), p)
		}
	}()
	return e.stages[it.stage].Start(it)
}

// stepStage runs one step of stage si over its ready items and reports
// whether it ran.
func (e *Engine) stepStage(si int) bool {
	last := si == len(e.stages)-1
	ready := e.ready[:0]
	for _, r := range e.running {
		if r.done {
			continue
		}
		it := &r.items[si]
		if it.done {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			e.fail(r, FinishAbort, err) // within one step of every stage
			continue
		}
		if si > 0 && len(it.in) == 0 {
			if r.items[si-1].done {
				e.fail(r, "", fmt.Errorf("engine: stage %s did not finish after its input ended", e.stages[si].Name()))
			}
			continue
		}
		if !last {
			if next := &r.items[si+1]; !next.done && len(next.in) >= e.limits[si+1].QueueLen {
				continue // backpressure
			}
		}
		ready = append(ready, it)
	}
	e.ready = ready
	if len(ready) == 0 {
		return false
	}
	batch := ready
	if max := e.limits[si].MaxItems; len(ready) > max {
		// Take turns: a window of max items, starting where the last
		// truncated batch of this stage stopped.
		start := e.turn[si] % len(ready)
		batch = append(e.batch[:0], ready[start:min(len(ready), start+max)]...)
		batch = append(batch, ready[:max-len(batch)]...)
		e.batch = batch
		e.turn[si] = (start + max) % len(ready)
	}
	e.stageStats[si].steps.Add(1)
	t0 := time.Now()
	e.safeStep(si, batch)
	e.observeStep(si, time.Since(t0))
	clear(e.ready)
	clear(e.batch)
	return true
}

// ObserveSteps has f called, on the engine's loop, with the time of
// every stage step: by part for a stage that splits its step (the speech
// talker stage: "talker", "predictor", "sampler"), otherwise under the
// stage's name. f must be quick. A later call replaces f.
func (e *Engine) ObserveSteps(f func(part string, d time.Duration)) { e.observer.Store(&f) }

// StepObserver returns the function ObserveSteps set last, or nil, so a
// later observer can pass the steps on to it.
func (e *Engine) StepObserver() func(part string, d time.Duration) {
	if f := e.observer.Load(); f != nil {
		return *f
	}
	return nil
}

func (e *Engine) observeStep(si int, d time.Duration) {
	f := e.observer.Load()
	if f == nil {
		return
	}
	if s, ok := e.stages[si].(splitStep); ok {
		s.stepParts(*f)
		return
	}
	(*f)(e.stages[si].Name(), d)
}

// safeStep runs a stage's step; a panic fails the batch's requests only.
func (e *Engine) safeStep(si int, batch []*Item) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("engine: stage %s: step panicked: %v", e.stages[si].Name(), p)
			for _, it := range batch {
				if !it.r.done {
					e.fail(it.r, "", err)
				}
			}
		}
	}()
	e.stages[si].Step(batch)
}

// endItem releases an item of a running request and frees its
// reservation.
func (e *Engine) endItem(it *Item) {
	if it.done {
		return
	}
	it.done = true
	ss := &e.stageStats[it.stage]
	e.used -= it.reserved
	ss.reserved.Add(-it.reserved)
	ss.items.Add(-1)
	ss.queued.Add(int64(-len(it.in)))
	clear(it.in)
	it.in = nil
	if it.started {
		// After the reservation is freed: a cache the stage keeps may
		// use the room.
		e.stages[it.stage].Release(it)
	}
	it.State = nil
	e.stats.kvUsed.Store(e.used)
}

// endRequest releases every item of a running request.
func (e *Engine) endRequest(r *request) {
	if r.done {
		return
	}
	for i := range r.items {
		e.endItem(&r.items[i])
	}
	r.done = true
	e.live--
	e.finished = true
	e.stats.running.Store(int64(e.live))
}

// fail ends a running request with a last event carrying why and err.
func (e *Engine) fail(r *request, why FinishReason, err error) {
	if r.done {
		return
	}
	e.endRequest(r)
	e.finish(r, why, err)
}

// finish sends a request's last event and closes its stream.
func (e *Engine) finish(r *request, why FinishReason, err error) {
	e.deliver(r, Event{Finish: why, Err: err})
	close(r.out)
}

// deliver sends an event to the caller, the first one with the prefix
// cache's count.
func (e *Engine) deliver(r *request, ev Event) {
	if !r.sent {
		ev.CachedTokens, r.sent = r.cached, true
	}
	send(r, ev)
}

// send delivers an event unless the caller has cancelled: a caller must
// read its events or cancel, and a cancelled one never blocks the loop.
func send(r *request, ev Event) {
	select {
	case r.out <- ev: // room in the buffer: delivered even after a cancel
		return
	default:
	}
	select {
	case r.out <- ev:
	case <-r.ctx.Done():
	}
}

// sweep drops ended requests from the running set.
func (e *Engine) sweep() {
	if !e.finished {
		return
	}
	e.finished = false
	kept := e.running[:0]
	for _, r := range e.running {
		if !r.done {
			kept = append(kept, r)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

func (e *Engine) abortAll() {
	for _, r := range e.running {
		e.fail(r, FinishAbort, errors.New("engine: shutting down"))
	}
	e.running = nil
	e.mu.Lock()
	for _, r := range e.waiting {
		e.finish(r, FinishAbort, errors.New("engine: shutting down"))
	}
	e.waiting = nil
	e.mu.Unlock()
	e.stats.running.Store(0)
	e.stats.waiting.Store(0)
}
