package engine

import (
	"fmt"
	"slices"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/sample"
)

// llmStage generates tokens with a model: its items read their prompt
// from the Request and emit one Event per token (Token set; the last with
// FinishStop or FinishLength), so it belongs first in a pipeline.
type llmStage struct {
	m                 model.Model
	maxItems, maxToks int
	e                 *Engine
	prefix            *prefixCache
	// The caches of ended sequences, emptied, for the next ones (see
	// kv.Cache.Reset): like the prefix cache they live in what
	// reservations leave of the budget, and give way first.
	spares     []*kv.Cache
	spareBytes int64

	// Scratch reused by every step.
	seqs   []model.Seq
	owners []*Item
	picks  []pick
}

// LLMStage returns a stage that runs m on the Request's prompt with
// continuous batching: every step feeds one token for each decoding item,
// then prompt chunks, within maxBatchedTokens, so a long prompt is
// prefilled over several steps while others keep decoding. Each item
// reserves the KV cache its prompt plus MaxTokens can need, and offers its
// full blocks to the stage's prefix cache. Zero limits take the engine's
// MaxNumSeqs and MaxNumBatchedTokens.
func LLMStage(m model.Model, maxItems, maxBatchedTokens int) Stage {
	return &llmStage{m: m, maxItems: maxItems, maxToks: maxBatchedTokens, prefix: newPrefixCache(m.Config())}
}

func (l *llmStage) attach(e *Engine) {
	if l.e != nil {
		panic("engine: an LLM stage serves one engine")
	}
	l.e = e
	if l.maxToks <= 0 {
		l.maxToks = e.cfg.MaxNumBatchedTokens
	}
}

func (l *llmStage) Name() string { return "llm" }

func (l *llmStage) Limits() StageLimits { return StageLimits{MaxItems: l.maxItems} }

// seq is one item's generation state.
type seq struct {
	cache     *kv.Cache
	fed       int   // prompt tokens already in the cache
	generated []int // output tokens
	cached    int
	// Prefix-cache progress: blocks inserted so far and the last one's hash.
	nextBlock int
	lastHash  uint64
	sum       []float32      // an embedding request's hidden states so far (PoolMean)
	scored    []sample.Token // prompt tokens scored so far (ScorePrompt)
}

// tokens is everything the sequence has fed or will feed next.
func (s *seq) tokens(r *Request) []int {
	if len(s.generated) == 0 {
		return r.Prompt
	}
	return append(append(make([]int, 0, len(r.Prompt)+len(s.generated)), r.Prompt...), s.generated...)
}

func (l *llmStage) Reserve(r *Request) (int64, error) {
	if len(r.Prompt) == 0 {
		return 0, fmt.Errorf("engine: empty prompt")
	}
	if r.Embed != NoEmbed {
		return l.m.Config().KVBytes(len(r.Prompt)), nil
	}
	if r.MaxTokens < 0 || r.MaxTokens == 0 && !r.ScorePrompt {
		return 0, fmt.Errorf("engine: max tokens must be positive")
	}
	if r.Sampler == nil && r.MaxTokens > 0 {
		return 0, fmt.Errorf("engine: no sampler")
	}
	return l.m.Config().KVBytes(len(r.Prompt) + r.MaxTokens), nil
}

// otherCaches is what the engine's other LLM stages' prefix caches and
// spares hold.
func (l *llmStage) otherCaches() int64 {
	var n int64
	for _, o := range l.e.llms {
		if o != l {
			n += o.prefix.bytes + o.spareBytes
		}
	}
	return n
}

// room is what the budget leaves this stage's prefix cache.
func (l *llmStage) room() int64 {
	return l.e.cfg.KVCacheBytes - l.e.used - l.otherCaches()
}

func (l *llmStage) storeCacheBytes() {
	l.e.stats.prefixBytes.Store(l.prefix.bytes + l.otherCaches())
}

func (l *llmStage) Start(it *Item) error {
	r := it.Request()
	// Spares, then cached prefix blocks, give way to running requests
	// (whose reservations the engine has just made).
	l.shrinkSpares(l.room() - l.prefix.bytes)
	l.prefix.evict(l.room() - l.spareBytes)
	l.storeCacheBytes()
	s := &seq{cache: l.takeSpare(it.reserved)}
	if s.cache == nil {
		s.cache = l.m.NewCache()
	}
	// What Reserve counted: the cache never grows past it.
	if r.Embed == NoEmbed {
		s.cache.Limit(len(r.Prompt) + r.MaxTokens)
	} else {
		s.cache.Limit(len(r.Prompt))
	}
	// Mean pooling and prompt scores need every prompt token's output:
	// no prefix.
	if chain := l.prefix.lookup(r.Prompt, r.CacheSalt); len(chain) > 0 && r.Embed != PoolMean && !r.ScorePrompt {
		l.prefix.restore(s.cache, chain)
		s.fed, s.cached = s.cache.Len(), s.cache.Len()
		s.nextBlock, s.lastHash = len(chain), chain[len(chain)-1].hash
	}
	if it.stage == 0 {
		it.r.cached = s.cached
	}
	l.e.stats.prefixQueries.Add(int64(len(r.Prompt)))
	l.e.stats.prefixHits.Add(int64(s.cached))
	it.State = s
	return nil
}

func (l *llmStage) Release(it *Item) {
	s := it.State.(*seq)
	if s.cache != nil {
		l.cacheBlocks(it, s) // what fits now that its reservation is free
		l.putSpare(s.cache)
	}
	s.cache = nil
}

// putSpare empties an ended sequence's cache and keeps it if it fits the
// room and the bound on entries.
func (l *llmStage) putSpare(c *kv.Cache) {
	b := cacheBytes(c)
	if b == 0 || len(l.spares) >= l.e.cfg.MaxNumSeqs || l.spareBytes+b > l.room()-l.prefix.bytes {
		return
	}
	c.Reset()
	l.spares = append(l.spares, c)
	l.addSpareBytes(b)
}

// takeSpare returns the largest spare cache of at most limit bytes (the
// sequence's reservation), or nil.
func (l *llmStage) takeSpare(limit int64) *kv.Cache {
	at := largestWithin(l.spares, cacheBytes, limit)
	if at < 0 {
		return nil
	}
	c := l.spares[at]
	l.spares = slices.Delete(l.spares, at, at+1)
	l.addSpareBytes(-cacheBytes(c))
	l.e.stats.spareHits.Add(1)
	return c
}

// cacheBytes is the memory a cache holds.
func cacheBytes(c *kv.Cache) int64 { return int64(c.Bytes()) }

// addSpareBytes counts d more bytes of spares, here and in the engine's
// Stats.
func (l *llmStage) addSpareBytes(d int64) {
	l.spareBytes += d
	l.e.stats.spareBytes.Add(d)
}

// shrinkSpares drops spares, the largest first, until they fit limit bytes.
func (l *llmStage) shrinkSpares(limit int64) {
	for l.spareBytes > limit && len(l.spares) > 0 {
		at := largest(l.spares, cacheBytes)
		l.addSpareBytes(-cacheBytes(l.spares[at]))
		l.spares = slices.Delete(l.spares, at, at+1)
	}
}

// Step runs one batched forward pass: one token for every decoding
// sequence, then prompt chunks within the token budget.
func (l *llmStage) Step(batch []*Item) {
	seqs, owners := l.plan(batch)
	defer func() {
		clear(seqs)
		clear(owners)
		l.seqs, l.owners = seqs[:0], owners[:0]
	}()
	if len(seqs) == 0 {
		return
	}
	logits, err := l.m.ForwardBatch(seqs)
	if err != nil {
		for _, it := range owners {
			it.Fail(err)
		}
		return
	}
	st := &l.e.stats
	picks := l.picks[:0]
	for i, it := range owners {
		s := it.State.(*seq)
		r := &it.r.req
		out := logits[i]
		if s.fed < len(r.Prompt) {
			if r.ScorePrompt {
				out = l.score(s, r, seqs[i].Tokens, out)
			}
			s.fed += len(seqs[i].Tokens)
			st.promptTokens.Add(int64(len(seqs[i].Tokens)))
		}
		l.cacheBlocks(it, s)
		if r.Embed != NoEmbed {
			l.embed(it, s, out)
			continue
		}
		if s.fed < len(r.Prompt) {
			continue // more prompt chunks to come
		}
		if it.r.ctx.Err() != nil {
			continue // dropped before the next step
		}
		if r.MaxTokens == 0 {
			it.Emit(Event{Token: sample.Token{ID: NoToken}, Finish: FinishLength, Prompt: s.scored})
			continue
		}
		picks = append(picks, pick{it: it, logits: out})
	}
	l.sample(picks)
	for i := range picks {
		l.emit(&picks[i])
	}
	clear(picks)
	l.picks = picks[:0]
	model.RecycleLogits(logits)
}

// plan lays out a step: one token for every decoding item, then prompt
// chunks within the token budget.
func (l *llmStage) plan(batch []*Item) ([]model.Seq, []*Item) {
	budget := l.maxToks
	seqs, owners := l.seqs[:0], l.owners[:0]
	for _, it := range batch {
		s := it.State.(*seq)
		if s.fed == len(it.r.req.Prompt) && len(s.generated) > 0 {
			seqs = append(seqs, model.Seq{Cache: s.cache, Tokens: s.generated[len(s.generated)-1:]})
			owners = append(owners, it)
			budget--
		}
	}
	for _, it := range batch {
		s := it.State.(*seq)
		p := it.r.req.Prompt
		if s.fed < len(p) && budget > 0 {
			n := min(budget, len(p)-s.fed)
			emb := it.r.req.Embed
			score := it.r.req.ScorePrompt
			if score {
				n = min(n, scoreChunk)
			}
			seqs = append(seqs, model.Seq{Cache: s.cache, Tokens: p[s.fed : s.fed+n], Hidden: emb != NoEmbed, AllLogits: emb == PoolMean || score})
			owners = append(owners, it)
			budget -= n
		}
	}
	return seqs, owners
}

// scoreChunk bounds a scored prompt's chunk: its logits are a row of the
// vocabulary per token (32 rows of a 152k vocabulary are 19 MB).
const scoreChunk = 32

// score appends to s.scored each of the chunk's rows' score of the prompt
// token that follows it, and returns the last row: the logits of the first
// token to generate once the chunk ends the prompt.
// The rows are scored on the kernels' threads: a log-softmax over the
// vocabulary per row took a fifth of a scored 512-token prompt's CPU time
// on one thread (Qwen3-1.7B shape).
func (l *llmStage) score(s *seq, r *Request, chunk []int, rows []float32) []float32 {
	v := l.m.Config().Vocab
	n := min(len(chunk), len(r.Prompt)-1-s.fed) // rows whose next token is in the prompt
	at := len(s.scored)
	s.scored = append(s.scored, make([]sample.Token, n)...)
	out := s.scored[at:]
	kernels.ParallelFor(n, 64*v, 1, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			out[j] = sample.Score(rows[j*v:(j+1)*v], r.Prompt[s.fed+j+1], r.PromptTop)
		}
	})
	return rows[(len(chunk)-1)*v:]
}

// pick is one sequence's next-token choice in a step.
type pick struct {
	it     *Item
	logits []float32
	tok    sample.Token
	err    error
}

// sample runs the picks' samplers, several at once on the kernels'
// threads: with two threads, a step's sampling would otherwise leave one
// idle (8 top-p draws over a 152k vocabulary take milliseconds). Each
// request's sampler is its own (seeded by request and step), so the
// tokens depend on neither the order nor the thread.
func (l *llmStage) sample(picks []pick) {
	if len(picks) == 0 {
		return
	}
	// A vocabulary entry costs a sampler about a nanosecond, what the
	// kernels take for some 64 multiply-adds (ParallelFor's unit).
	kernels.ParallelFor(len(picks), 64*len(picks[0].logits), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			p := &picks[i]
			p.tok, p.err = p.it.r.req.Sampler.Sample(p.logits)
		}
	})
}

// emit reports a sampled token (or the sampler's error) and ends the
// item at a stop token or its token limit.
func (l *llmStage) emit(p *pick) {
	it, s, r := p.it, p.it.State.(*seq), &p.it.r.req
	if p.err != nil {
		it.Fail(p.err)
		return
	}
	ev := Event{Token: p.tok, Prompt: s.scored}
	s.scored = nil
	l.e.stats.generationTokens.Add(1)
	stop := r.Stop != nil && r.Stop(p.tok.ID)
	if !stop {
		s.generated = append(s.generated, p.tok.ID)
	}
	switch {
	case stop:
		ev.Finish = FinishStop
	case len(s.generated) >= r.MaxTokens:
		ev.Finish = FinishLength
	}
	it.Emit(ev)
}

// embed pools an embedding request's hidden states (out: one row per
// fed token for PoolMean, the chunk's last for PoolLast) and ends the
// request with the vector once the whole prompt is in.
func (l *llmStage) embed(it *Item, s *seq, out []float32) {
	r := &it.r.req
	d := l.m.Config().Hidden
	if r.Embed == PoolMean {
		if s.sum == nil {
			s.sum = make([]float32, d)
		}
		for i := 0; i+d <= len(out); i += d {
			for j := range d {
				s.sum[j] += out[i+j]
			}
		}
	}
	if s.fed < len(r.Prompt) {
		return
	}
	vec := append([]float32(nil), out[len(out)-d:]...)
	if r.Embed == PoolMean {
		vec = s.sum
		for j := range vec {
			vec[j] /= float32(len(r.Prompt))
		}
	}
	it.Emit(Event{Data: vec, Finish: FinishStop})
}

// cacheBlocks offers the sequence's newly completed blocks to the prefix
// cache, within what the budget leaves after running requests.
func (l *llmStage) cacheBlocks(it *Item, s *seq) {
	if (s.nextBlock+1)*BlockSize > s.cache.Len() {
		return
	}
	r := it.Request()
	room := func(n int64) bool {
		limit := l.room() - n
		l.shrinkSpares(limit - l.prefix.bytes) // spares give way first
		limit -= l.spareBytes
		if l.prefix.bytes > limit {
			l.prefix.evict(limit)
		}
		return l.prefix.bytes <= limit
	}
	s.nextBlock, s.lastHash = l.prefix.insert(s.cache, s.tokens(r), r.CacheSalt, s.nextBlock, s.lastHash, room)
	l.storeCacheBytes()
}
