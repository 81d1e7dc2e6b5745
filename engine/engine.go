package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siskin-ml/siskin/kv"
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

// Sampler chooses each next token of one sequence.
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
}

// Event is what a request's stream delivers: a token, or the end.
type Event struct {
	Token  sample.Token
	Finish FinishReason // set on the last event
	Err    error        // set when the request failed
	// CachedTokens is how many prompt tokens were served from the prefix
	// cache (set on the first event).
	CachedTokens int
}

// Abort is the finish reason of a request cancelled by its caller.
const FinishAbort FinishReason = "abort"

// Stats is a snapshot of the engine's state and counters.
type Stats struct {
	Running, Waiting     int
	KVUsedBytes, KVBytes int64
	PrefixQueries        int64 // prompt tokens looked up in the prefix cache
	PrefixHits           int64 // of those, tokens found
	PrefixCacheBytes     int64 // held by cached prefix blocks
	PromptTokens         int64
	GenerationTokens     int64
	Steps                int64
}

type seq struct {
	req       Request
	ctx       context.Context
	out       chan Event
	cache     *kv.Cache
	fed       int   // prompt tokens already in the cache
	generated []int // output tokens
	reserved  int64
	cached    int
	started   bool
	// Prefix-cache progress: blocks inserted so far and the last one's hash.
	nextBlock int
	lastHash  uint64
}

// tokens is everything the sequence has fed or will feed next.
func (s *seq) tokens() []int {
	if len(s.generated) == 0 {
		return s.req.Prompt
	}
	return append(append(make([]int, 0, len(s.req.Prompt)+len(s.generated)), s.req.Prompt...), s.generated...)
}

// Engine runs requests on one model in a loop of batched steps.
type Engine struct {
	m   model.Model
	cfg Config

	mu      sync.Mutex
	waiting []*seq
	wake    chan struct{}
	closed  bool

	// Owned by the loop goroutine.
	running []*seq
	kvUsed  int64
	prefix  *prefixCache

	stats struct {
		running, waiting               atomic.Int64
		kvUsed                         atomic.Int64
		prefixQueries, prefixHits      atomic.Int64
		prefixBytes                    atomic.Int64
		promptTokens, generationTokens atomic.Int64
		steps                          atomic.Int64
	}
	done chan struct{}
}

// New starts an engine on m.
func New(m model.Model, cfg Config) *Engine {
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
	e := &Engine{m: m, cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{}), prefix: newPrefixCache(m.Config())}
	go e.loop()
	return e
}

// Model returns the engine's model.
func (e *Engine) Model() model.Model { return e.m }

// Config returns the engine's limits.
func (e *Engine) Config() Config { return e.cfg }

// reservation is the KV bytes a request may need at its longest.
func (e *Engine) reservation(r *Request) int64 {
	return e.m.Config().KVBytes(len(r.Prompt) + r.MaxTokens)
}

// Submit queues a request. Events arrive on the returned channel, which is
// closed after the last one; cancelling ctx aborts the request and frees
// its cache within one step.
func (e *Engine) Submit(ctx context.Context, r Request) (<-chan Event, error) {
	if len(r.Prompt) == 0 {
		return nil, fmt.Errorf("engine: empty prompt")
	}
	if r.MaxTokens <= 0 {
		return nil, fmt.Errorf("engine: max tokens must be positive")
	}
	if r.Sampler == nil {
		return nil, fmt.Errorf("engine: no sampler")
	}
	s := &seq{req: r, ctx: ctx, out: make(chan Event, 16)}
	s.reserved = e.reservation(&r)
	if s.reserved > e.cfg.KVCacheBytes {
		return nil, fmt.Errorf("%w: %d prompt + %d new tokens need %d bytes, the budget is %d", ErrTooLarge, len(r.Prompt), r.MaxTokens, s.reserved, e.cfg.KVCacheBytes)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("engine: shutting down")
	}
	if len(e.waiting) >= e.cfg.MaxWaiting {
		return nil, ErrQueueFull
	}
	e.waiting = append(e.waiting, s)
	e.stats.waiting.Store(int64(len(e.waiting)))
	e.signal()
	return s.out, nil
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
	return Stats{
		Running:          int(e.stats.running.Load()),
		Waiting:          int(e.stats.waiting.Load()),
		KVUsedBytes:      e.stats.kvUsed.Load(),
		KVBytes:          e.cfg.KVCacheBytes,
		PrefixQueries:    e.stats.prefixQueries.Load(),
		PrefixHits:       e.stats.prefixHits.Load(),
		PrefixCacheBytes: e.stats.prefixBytes.Load(),
		PromptTokens:     e.stats.promptTokens.Load(),
		GenerationTokens: e.stats.generationTokens.Load(),
		Steps:            e.stats.steps.Load(),
	}
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
		e.dropCancelled()
		if len(e.running) == 0 {
			e.idle()
			continue
		}
		e.step()
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
	select {
	case <-e.wake:
	case <-time.After(10 * time.Millisecond):
	}
}

// admit moves waiting requests into the running set while sequences and
// KV budget allow, in arrival order.
func (e *Engine) admit() {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.waiting[:0]
	for i, s := range e.waiting {
		if s.ctx.Err() != nil {
			e.finish(s, FinishAbort, s.ctx.Err())
			continue
		}
		if len(e.running) < e.cfg.MaxNumSeqs && e.kvUsed+s.reserved <= e.cfg.KVCacheBytes && len(kept) == 0 {
			// Cached prefix blocks give way to running requests.
			e.prefix.evict(e.cfg.KVCacheBytes - e.kvUsed - s.reserved)
			e.stats.prefixBytes.Store(e.prefix.bytes)
			s.cache = e.m.NewCache()
			if chain := e.prefix.lookup(s.req.Prompt, s.req.CacheSalt); len(chain) > 0 {
				e.prefix.restore(s.cache, chain)
				s.fed, s.cached = s.cache.Len(), s.cache.Len()
				s.nextBlock, s.lastHash = len(chain), chain[len(chain)-1].hash
			}
			e.stats.prefixQueries.Add(int64(len(s.req.Prompt)))
			e.stats.prefixHits.Add(int64(s.cached))
			e.kvUsed += s.reserved
			e.running = append(e.running, s)
			continue
		}
		kept = append(kept, e.waiting[i])
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
	e.stats.waiting.Store(int64(len(e.waiting)))
	e.stats.running.Store(int64(len(e.running)))
	e.stats.kvUsed.Store(e.kvUsed)
}

func (e *Engine) dropCancelled() {
	kept := e.running[:0]
	for _, s := range e.running {
		if err := s.ctx.Err(); err != nil {
			e.release(s)
			e.finish(s, FinishAbort, err)
			continue
		}
		kept = append(kept, s)
	}
	clear(e.running[len(kept):])
	e.running = kept
	e.stats.running.Store(int64(len(e.running)))
}

func (e *Engine) release(s *seq) {
	e.kvUsed -= s.reserved
	if s.cache != nil {
		e.cacheBlocks(s) // what fits now that its reservation is free
	}
	s.cache = nil
	e.stats.kvUsed.Store(e.kvUsed)
}

func (e *Engine) finish(s *seq, why FinishReason, err error) {
	ev := Event{Finish: why, Err: err}
	if !s.started {
		ev.CachedTokens = s.cached
	}
	send(s, ev)
	close(s.out)
}

// send delivers an event unless the caller has cancelled: a caller must
// read its events or cancel, and a cancelled one never blocks the loop.
func send(s *seq, ev Event) {
	select {
	case s.out <- ev: // room in the buffer: delivered even after a cancel
		return
	default:
	}
	select {
	case s.out <- ev:
	case <-s.ctx.Done():
	}
}

func (e *Engine) abortAll() {
	for _, s := range e.running {
		e.release(s)
		e.finish(s, FinishAbort, errors.New("engine: shutting down"))
	}
	e.running = nil
	e.mu.Lock()
	for _, s := range e.waiting {
		e.finish(s, FinishAbort, errors.New("engine: shutting down"))
	}
	e.waiting = nil
	e.mu.Unlock()
	e.stats.running.Store(0)
	e.stats.waiting.Store(0)
}

// step runs one batched forward pass: one token for every decoding
// sequence, then prompt chunks within the token budget.
func (e *Engine) step() {
	budget := e.cfg.MaxNumBatchedTokens
	var seqs []model.Seq
	var owners []*seq
	for _, s := range e.running {
		if s.fed == len(s.req.Prompt) && len(s.generated) > 0 {
			seqs = append(seqs, model.Seq{Cache: s.cache, Tokens: s.generated[len(s.generated)-1:]})
			owners = append(owners, s)
			budget--
		}
	}
	for _, s := range e.running {
		if s.fed < len(s.req.Prompt) && budget > 0 {
			n := min(budget, len(s.req.Prompt)-s.fed)
			seqs = append(seqs, model.Seq{Cache: s.cache, Tokens: s.req.Prompt[s.fed : s.fed+n]})
			owners = append(owners, s)
			budget -= n
		}
	}
	logits, err := e.m.ForwardBatch(seqs)
	e.stats.steps.Add(1)
	if err != nil {
		for _, s := range owners {
			e.release(s)
			e.finish(s, "", err)
		}
		e.removeFinished(owners)
		return
	}
	var done []*seq
	for i, s := range owners {
		if s.fed < len(s.req.Prompt) {
			s.fed += len(seqs[i].Tokens)
			e.stats.promptTokens.Add(int64(len(seqs[i].Tokens)))
		}
		e.cacheBlocks(s)
		if s.fed < len(s.req.Prompt) {
			continue // more prompt chunks to come
		}
		if s.ctx.Err() != nil {
			continue // dropped at the start of the next step
		}
		tok, err := s.req.Sampler.Sample(logits[i])
		if err != nil {
			e.release(s)
			e.finish(s, "", err)
			done = append(done, s)
			continue
		}
		ev := Event{Token: tok}
		if !s.started {
			ev.CachedTokens, s.started = s.cached, true
		}
		e.stats.generationTokens.Add(1)
		stop := s.req.Stop != nil && s.req.Stop(tok.ID)
		if !stop {
			s.generated = append(s.generated, tok.ID)
		}
		switch {
		case stop:
			ev.Finish = FinishStop
		case len(s.generated) >= s.req.MaxTokens:
			ev.Finish = FinishLength
		}
		if ev.Finish != "" {
			e.release(s) // freed before the caller hears of the end
			done = append(done, s)
		}
		send(s, ev)
		if ev.Finish != "" {
			close(s.out)
		}
	}
	e.removeFinished(done)
}

// cacheBlocks offers the sequence's newly completed blocks to the prefix
// cache, within what the KV budget leaves after running requests.
func (e *Engine) cacheBlocks(s *seq) {
	if (s.nextBlock+1)*BlockSize > s.cache.Len() {
		return
	}
	room := func(n int64) bool {
		limit := e.cfg.KVCacheBytes - e.kvUsed - n
		if e.prefix.bytes > limit {
			e.prefix.evict(limit)
		}
		return e.prefix.bytes <= limit
	}
	s.nextBlock, s.lastHash = e.prefix.insert(s.cache, s.tokens(), s.req.CacheSalt, s.nextBlock, s.lastHash, room)
	e.stats.prefixBytes.Store(e.prefix.bytes)
}

func (e *Engine) removeFinished(done []*seq) {
	if len(done) == 0 {
		return
	}
	gone := map[*seq]bool{}
	for _, s := range done {
		gone[s] = true
	}
	kept := e.running[:0]
	for _, s := range e.running {
		if !gone[s] {
			kept = append(kept, s)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
	e.stats.running.Store(int64(len(e.running)))
}
