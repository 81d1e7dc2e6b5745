package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// Speech is what a speech request carries in Request.Params.
type Speech struct {
	// Utterance is the talker request (ids, voice, sampling, seed, frames).
	// The stages do not change it; its OnFrame and Trace must be nil.
	Utterance *qwen3tts.Request
	// Codes skips the codec: the last stage delivers the frames ([]int of
	// 16 codes each) instead of audio (output_mode codec_tokens).
	Codes bool
	// FirstChunk is how many frames the first audio chunk waits for (time
	// to first audio against chunk overhead); 0 means 1. Later chunks wait
	// for the codec's LaterChunk frames (two, more once the audio sent is
	// well ahead of playback), or take whatever queued while the codec
	// was busy if that is more; the last one takes what is left.
	FirstChunk int
}

// NewSpeechPipeline starts an engine that speaks: the Qwen3-TTS talker
// and code predictor in one stage (each talker step needs the frame the
// predictor just made), the codec decoder in the next. Each request's
// Params must be a *Speech; its events carry audio chunks (Data
// []float32, 24 kHz mono) or, in Codes mode, frames (Data []int), and the
// last one FinishStop (EOS) or FinishLength (max frames). dec may be nil
// when every request is in Codes mode.
//
// The talker stage keeps the talker KV of each conditioning prefix (the
// instruct block, role, language and speaker rows) it has run, so the
// next request with the same voice, language and instructions prefills
// only its text: Event.CachedTokens and Stats.PrefixHits count those
// rows. Its cache lives in what reservations leave of the budget, and so
// do the caches and codec streams of ended utterances, which later ones
// reuse (spares).
func NewSpeechPipeline(cfg Config, m *qwen3tts.Model, dec *codec.Decoder) *Engine {
	cache := newCondCache()
	spare := &spares{cond: cache}
	return NewPipeline(cfg, &talkerStage{m: m, cache: cache, spare: spare}, &codecStage{dec: dec, spare: spare})
}

func speechParams(r *Request) (*Speech, error) {
	sp, ok := r.Params.(*Speech)
	if !ok || sp == nil || sp.Utterance == nil {
		return nil, errors.New("engine: a speech request needs Params of type *engine.Speech")
	}
	return sp, nil
}

// talkerStage runs the talker and the code predictor for every live
// utterance in one batched step per frame (qwen3tts.Model.Step).
type talkerStage struct {
	m     *qwen3tts.Model
	e     *Engine
	cache *condCache
	spare *spares
	parts qwen3tts.Stats        // the last step's time by part
	uts   []*qwen3tts.Utterance // scratch
}

func (t *talkerStage) attach(e *Engine) { t.e, t.spare.e = e, e }

func (t *talkerStage) Name() string { return "talker" }

func (t *talkerStage) Limits() StageLimits { return StageLimits{} }

// Reserve holds the talker KV of the prompt plus every frame and the
// predictor's 16-position KV; a prompt the talker's context cannot hold
// is refused here.
func (t *talkerStage) Reserve(r *Request) (int64, error) {
	sp, err := speechParams(r)
	if err != nil {
		return 0, err
	}
	u, c := sp.Utterance, t.m.Cfg
	if u.OnFrame != nil || u.Trace != nil {
		return 0, errors.New("engine: a speech request's OnFrame and Trace must be nil")
	}
	if u.MaxFrames < 1 {
		return 0, fmt.Errorf("engine: max frames %d must be at least 1", u.MaxFrames)
	}
	p, err := c.BuildPrompt(u.IDs, u.Voice)
	if err != nil {
		return 0, err
	}
	pos := len(p.Text) + u.MaxFrames + 1
	if pos > c.Talker.ContextLength {
		return 0, fmt.Errorf("%w: a prompt of %d rows and %d frames needs %d talker positions, more than its %d", ErrTooLarge, len(p.Text), u.MaxFrames, pos, c.Talker.ContextLength)
	}
	return c.Talker.KVBytes(pos) + c.Predictor.KVBytes(c.CodeGroups), nil
}

// Start begins the utterance from its cached conditioning when there is
// one (the cache first gives way to the reservations just made).
func (t *talkerStage) Start(it *Item) error {
	r := it.Request()
	sp, err := speechParams(r)
	if err != nil {
		return err
	}
	p, err := t.m.Cfg.BuildPrompt(sp.Utterance.IDs, sp.Utterance.Voice)
	if err != nil {
		return fmt.Errorf("talker: %w", err)
	}
	t.fit()
	key := condKey(r.CacheSalt, p)
	cond := t.cache.get(key)
	// A copy with its own Stats: the step timings come from them.
	req := *sp.Utterance
	req.Stats = &qwen3tts.Stats{}
	// Spare caches no larger than fresh ones could grow to (doubling).
	mem := t.spare.takeMemory(2 * it.reserved)
	u, err := t.m.BeginWith(&req, cond, mem)
	if err != nil {
		return fmt.Errorf("talker: %w", err)
	}
	if mem != nil {
		t.e.stats.spareHits.Add(1)
	}
	it.State = &talkerItem{u: u, key: key, stored: cond != nil, stats: req.Stats}
	it.r.cached = u.Cached()
	t.e.stats.prefixQueries.Add(int64(len(p.Text)))
	t.e.stats.prefixHits.Add(int64(u.Cached()))
	t.e.stats.prefixBytes.Store(t.cache.bytes)
	return nil
}

func (t *talkerStage) Step(batch []*Item) {
	t.store(batch...)
	t.uts = t.uts[:0]
	for _, it := range batch {
		t.uts = append(t.uts, it.State.(*talkerItem).u)
	}
	err := t.m.Step(t.uts)
	clear(t.uts)
	if err == nil {
		t.account(batch)
	}
	for _, it := range batch {
		if err != nil {
			it.Fail(fmt.Errorf("talker: %w", err))
			continue
		}
		u := it.State.(*talkerItem).u
		for _, f := range u.Frames() {
			it.Emit(Event{Data: f})
		}
		if u.Done() {
			why := FinishStop
			if u.Stop() == "max_frames" {
				why = FinishLength
			}
			it.Emit(Event{Finish: why})
		}
	}
}

// Release keeps the utterance's caches for a later one.
func (t *talkerStage) Release(it *Item) {
	if ti, ok := it.State.(*talkerItem); ok {
		t.store(it)
		t.spare.putMemory(ti.u.Free())
	}
}

// fit makes the spares and cached conditionings fit what reservations
// leave, the spares giving way first.
func (t *talkerStage) fit() {
	t.spare.shrink(t.room() - t.cache.bytes)
	t.cache.evict(t.room()-t.spare.bytes, t.cache.max)
}

// codecStage turns frames into audio with one stateful decoder stream per
// utterance: exact for any chunking, so streamed audio equals buffered.
type codecStage struct {
	dec   *codec.Decoder
	spare *spares
	// beside is held by the chunk decoding beside the talker: one at a
	// time, since several (one per utterance) and the talker's threads
	// thrashed over two cores (in bench --tts four utterances made 7-10%
	// less audio a second that way).
	beside sync.Mutex
}

// codecItem is an utterance's decoder state.
type codecItem struct {
	sp      *Speech
	stream  *codec.Stream
	pending []int32   // frames waiting for their chunk
	frames  int       // frames decoded
	firstAt time.Time // when the first chunk's audio went out
	// flight, while a chunk decodes beside the talker, receives its
	// audio; flying holds that chunk's codes meanwhile.
	flight chan codecChunk
	flying []int32
}

// codecChunk is a decoded chunk: its audio, or why it failed.
type codecChunk struct {
	pcm []float32
	err error
}

func (c *codecStage) Name() string { return "codec" }

func (c *codecStage) Limits() StageLimits { return StageLimits{QueueLen: 64} }

func (c *codecStage) Reserve(r *Request) (int64, error) {
	sp, err := speechParams(r)
	if err != nil || sp.Codes {
		return 0, err
	}
	if c.dec == nil {
		return 0, errors.New("engine: this speech pipeline has no codec: only codec_tokens output")
	}
	return c.dec.StreamBytes(codec.DefaultChunk), nil
}

func (c *codecStage) Start(it *Item) error {
	sp, _ := speechParams(it.Request())
	ci := &codecItem{sp: sp}
	if !sp.Codes {
		if ci.stream = c.spare.takeStream(); ci.stream == nil {
			ci.stream = c.dec.NewStream(codec.DefaultChunk)
		}
	}
	it.State = ci
	return nil
}

func (c *codecStage) Step(batch []*Item) {
	for _, it := range batch {
		ci := it.State.(*codecItem)
		in := it.Input()
		n := len(in)
		var finish FinishReason
		for _, ev := range in {
			if f, ok := ev.Data.([]int); ok {
				if ci.sp.Codes {
					it.Emit(Event{Data: f})
					continue
				}
				for _, code := range f {
					ci.pending = append(ci.pending, int32(code))
				}
			}
			finish = ev.Finish
		}
		it.Consume(n)
		if ci.sp.Codes {
			if finish != "" {
				it.Emit(Event{Finish: finish})
			}
			continue
		}
		c.decode(it, ci, finish)
	}
}

// decode emits the audio of a chunk decoded beside the talker, if it is
// done, and pushes the pending frames once their chunk is complete (or
// the utterance ended). The first chunk (time to first audio) and the
// last decode here, with every thread; the chunks between decode on a
// goroutine of their own while the talker and predictor make the next
// frames (the two share the kernels' threads), one utterance's chunk at
// a time, and the frames that arrive meanwhile wait for the next chunk.
func (c *codecStage) decode(it *Item, ci *codecItem, finish FinishReason) {
	if !c.land(it, ci, finish != "") {
		return
	}
	groups := c.dec.Config().Quantizers
	want := max(1, ci.sp.FirstChunk)
	if ci.frames > 0 {
		want = c.dec.LaterChunk(ci.frames, time.Since(ci.firstAt))
	}
	if finish == "" && (ci.flight != nil || len(ci.pending) < want*groups) {
		return
	}
	if finish == "" && ci.frames > 0 {
		codes := ci.pending
		ci.pending, ci.flying = ci.flying[:0], codes
		ci.flight = make(chan codecChunk, 1)
		go func(stream *codec.Stream, done chan<- codecChunk) {
			c.beside.Lock()
			pcm, err := stream.Push(nil, codes)
			c.beside.Unlock()
			done <- codecChunk{pcm, err}
		}(ci.stream, ci.flight)
		ci.frames += len(codes) / groups
		return
	}
	var pcm []float32
	if len(ci.pending) > 0 {
		var err error
		if pcm, err = ci.stream.Push(nil, ci.pending); err != nil {
			it.Fail(fmt.Errorf("codec: %w", err))
			return
		}
		if ci.frames == 0 {
			ci.firstAt = time.Now()
		}
		ci.frames += len(ci.pending) / groups
		ci.pending = ci.pending[:0]
	}
	ev := Event{Finish: finish}
	if len(pcm) > 0 {
		ev.Data = pcm
	}
	if ev.Data != nil || finish != "" {
		it.Emit(ev)
	}
}

// land emits the audio of the chunk decoding beside the talker once it is
// done (wait: wait for it) and reports whether the item may go on.
func (c *codecStage) land(it *Item, ci *codecItem, wait bool) bool {
	if ci.flight == nil {
		return true
	}
	var done codecChunk
	if wait {
		done = <-ci.flight
	} else {
		select {
		case done = <-ci.flight:
		default:
			return true
		}
	}
	ci.flight = nil
	if done.err != nil {
		it.Fail(fmt.Errorf("codec: %w", done.err))
		return false
	}
	if len(done.pcm) > 0 {
		it.Emit(Event{Data: done.pcm})
	}
	return true
}

// Release keeps the utterance's codec stream for a later one, once no
// chunk decodes into it.
func (c *codecStage) Release(it *Item) {
	if ci, ok := it.State.(*codecItem); ok {
		if ci.flight != nil {
			<-ci.flight
		}
		c.spare.putStream(ci.stream)
	}
}
