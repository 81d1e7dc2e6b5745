package qwen3tts

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/sample"
)

// Sampling is how one side (talker or code predictor) picks a code.
type Sampling struct {
	// Greedy takes the argmax (do_sample false, or temperature 0).
	Greedy      bool
	Temperature float64
	TopK        int // 0: off
	TopP        float64
}

// Request is one utterance to generate.
type Request struct {
	// IDs is the tokenized, wrapped text (see Config.BuildPrompt).
	IDs []int
	Voice
	Talker, Predictor Sampling
	// RepetitionPenalty applies to the codebook-0 codes generated so far
	// (1: off).
	RepetitionPenalty float64
	// MaxFrames bounds the frames (the official max_new_tokens is one
	// more: the last code0 never reaches the predictor).
	MaxFrames int
	// IgnoreEOS masks EOS at every step, so the request runs MaxFrames
	// frames (benchmarks).
	IgnoreEOS bool
	// Seed seeds the request's generators when Seeded (otherwise one is
	// drawn); the same seed gives the same codes.
	Seed   uint64
	Seeded bool
	// OnFrame, if not nil, receives each frame as soon as it is made (a
	// streaming caller's hook). An error from it ends this request (Stop
	// "canceled") and no other.
	OnFrame func(frame []int) error
	// ReferencePredictor runs the float32 code predictor kept for the
	// parity check (Options.ParityCheck) instead of the model's own.
	ReferencePredictor bool
	// Trace, when not nil, receives the intermediate values.
	Trace *Trace
	// Stats, when not nil, accumulates where the time went.
	Stats *Stats
}

// Stats is where a request's generation time went. In a batch every
// request is charged the whole step's time (the step is shared).
type Stats struct {
	Prefill   time.Duration // the talker's prompt step
	Talker    time.Duration // later talker steps (decoder, norm, head)
	Predictor time.Duration // code predictor sub-steps and embeddings
	Sampler   time.Duration // token rules and sampling, both sides
}

// charge adds d to the field at of each stream's Stats.
func charge(streams []*stream, d time.Duration, at func(*Stats) *time.Duration) {
	for _, s := range streams {
		if st := s.req.Stats; st != nil {
			*at(st) += d
		}
	}
}

// minNewTokens is the official min_new_tokens: EOS is masked at talker
// steps 0 and 1 (M:2044-2066).
const minNewTokens = 2

// NewRequest returns a request for ids with the checkpoint's sampling
// defaults (generation_config.json).
func (c *Config) NewRequest(ids []int, v Voice) *Request {
	g := c.Gen
	return &Request{IDs: ids, Voice: v,
		Talker:            Sampling{Greedy: !g.DoSample, Temperature: g.Temperature, TopK: g.TopK, TopP: g.TopP},
		Predictor:         Sampling{Greedy: !g.SubDoSample, Temperature: g.SubTemperature, TopK: g.SubTopK, TopP: g.SubTopP},
		RepetitionPenalty: g.RepetitionPenalty,
		MaxFrames:         g.MaxNewTokens - 1,
	}
}

// Result is a generated utterance: one row of CodeGroups codes per frame.
type Result struct {
	Codes [][]int
	// Stop is "eos" (the talker ended the utterance), "max_frames", or
	// "canceled" (OnFrame returned an error).
	Stop string
	// Seed is the talker generator's seed (the predictor's derives from it).
	Seed uint64
}

// Trace holds what a request computed, for tests against the official
// model's intermediate values.
type Trace struct {
	Prompt          *Prompt
	PrefillEmbeds   []float32   // [L][H]
	PrefillResidual [][]float32 // [layers+1][L][H]
	PrefillHidden   []float32   // [L][H] after the final norm
	Trailing        []float32   // [len(Prompt.Trailing)][H]
	TalkerLogits    [][]float32 // per talker step
	TalkerScores    [][]float32 // after the token rules
	TalkerHidden    [][]float32 // normed last hidden per step
	Code0           []int       // per talker step
	CPInputs        [][]float32 // per frame [16][C]
	CPLogits        [][]float32 // per frame [15][predictor vocab]
	CPHidden        [][]float32 // per frame [15][C]
	NextInputs      [][]float32 // per frame [H]
}

// stream is a request in flight.
type stream struct {
	req                *Request
	prompt             *Prompt
	stepped            bool // the talker has run its prompt
	trailing           []float32
	talkerKV, predKV   *kv.Cache
	talkerSeq, predSeq *sample.Sequence
	pred               *predictor // the code predictor it runs
	code0s             []int      // generated codebook-0 codes (penalized)
	codes              [][]int
	h                  []float32 // talker's normed last hidden
	next               []float32 // the talker's next input row (Step)
	code0              int
	done               bool
	stop               string
}

// Generate runs requests together, each talker and predictor step as one
// batch; every request gets the codes it would get alone.
func (m *Model) Generate(reqs []*Request) ([]*Result, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	streams := make([]*stream, len(reqs))
	var prefill [][]float32
	for i, r := range reqs {
		s, rows, err := m.start(r, nil)
		if err != nil {
			if len(reqs) > 1 {
				err = fmt.Errorf("request %d: %w", i, err)
			}
			return nil, err
		}
		streams[i], prefill = s, append(prefill, rows)
	}
	if err := m.talkerStep(streams, prefill); err != nil {
		return nil, err
	}
	for {
		live := active(streams)
		if len(live) == 0 {
			break
		}
		sums, err := m.predictAll(live)
		if err != nil {
			return nil, err
		}
		// Streams whose caller stopped them are left out of the talker step.
		live, sums = notify(live, sums)
		if len(live) == 0 {
			continue
		}
		if err := m.talkerStep(live, m.nextInputs(live, sums)); err != nil {
			return nil, err
		}
	}
	out := make([]*Result, len(streams))
	for i, s := range streams {
		out[i] = &Result{Codes: s.codes, Stop: s.stop, Seed: s.talkerSeq.Seed()}
	}
	return out, nil
}

// notify hands each stream's new frame to its OnFrame and returns the
// streams (and their frame sums) that go on.
func notify(streams []*stream, sums [][]float32) ([]*stream, [][]float32) {
	var live []*stream
	var keep [][]float32
	for i, s := range streams {
		if f := s.req.OnFrame; f != nil {
			if err := f(s.codes[len(s.codes)-1]); err != nil {
				s.done, s.stop = true, "canceled"
				continue
			}
		}
		live, keep = append(live, s), append(keep, sums[i])
	}
	return live, keep
}

func active(streams []*stream) []*stream {
	var live []*stream
	for _, s := range streams {
		if !s.done {
			live = append(live, s)
		}
	}
	return live
}

// start checks a request and builds its prompt rows and samplers, its
// caches from mem when it is not nil.
func (m *Model) start(r *Request, mem *Memory) (*stream, []float32, error) {
	c := m.Cfg
	if r.MaxFrames < 1 {
		return nil, nil, fmt.Errorf("max frames %d must be at least 1", r.MaxFrames)
	}
	if !(r.RepetitionPenalty > 0) || math.IsInf(r.RepetitionPenalty, 0) {
		return nil, nil, fmt.Errorf("repetition penalty %v must be a positive number", r.RepetitionPenalty)
	}
	p, err := c.BuildPrompt(r.IDs, r.Voice)
	if err != nil {
		return nil, nil, err
	}
	// The talker sees the prefill, then one row per frame and the final
	// step: positions 0 .. L+MaxFrames.
	need := len(p.Text) + r.MaxFrames + 1
	if need > c.Talker.ContextLength {
		return nil, nil, fmt.Errorf("input of %d ids makes a prompt of %d rows; with %d frames it needs %d positions, more than the talker's %d (max_position_embeddings)",
			len(r.IDs), len(p.Text), r.MaxFrames, need, c.Talker.ContextLength)
	}
	pred := m.pred
	if r.ReferencePredictor {
		if pred = m.ref; pred == nil {
			return nil, nil, errors.New("the float32 reference predictor was not loaded (Options.ParityCheck)")
		}
	}
	rows, trailing, err := m.Embed(p)
	if err != nil {
		return nil, nil, err
	}
	s := &stream{req: r, prompt: p, trailing: trailing, pred: pred}
	s.talkerKV, s.predKV = m.caches(mem)
	// Bounded caches allocate the rows the request can use at once
	// instead of doubling from one row: every doubling copied the rows so
	// far and touched fresh pages, in the prefill, before the first audio.
	s.talkerKV.Limit(need)
	s.predKV.Limit(c.CodeGroups)
	if s.talkerSeq, err = newSequence(r.Talker, r.Seed, r.Seeded, "talker"); err != nil {
		return nil, nil, err
	}
	// The predictor draws from its own generator, seeded from the
	// talker's so one seed fixes both.
	if s.predSeq, err = newSequence(r.Predictor, s.talkerSeq.Seed()^0x9e3779b97f4a7c15, true, "subtalker"); err != nil {
		return nil, nil, err
	}
	if t := r.Trace; t != nil {
		t.Prompt, t.PrefillEmbeds, t.Trailing = p, append([]float32(nil), rows...), trailing
	}
	return s, rows, nil
}

// newSequence makes a sampler with only the warpers (temperature, top-k,
// top-p): the token rules run before it (talkerScores).
func newSequence(sp Sampling, seed uint64, seeded bool, side string) (*sample.Sequence, error) {
	p := sample.Defaults()
	p.Temperature, p.TopK, p.TopP = sp.Temperature, sp.TopK, sp.TopP
	if sp.Greedy { // the warpers do not apply
		p.Temperature, p.TopK, p.TopP = 0, 0, 1
	}
	p.Seed, p.Seeded = seed, seeded
	seq, err := sample.NewSequence(p, nil)
	if err != nil {
		var pe *sample.ParamError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s %s", side, pe.Msg)
		}
		return nil, err
	}
	return seq, nil
}

// talkerStep runs one talker step over each stream's rows and picks its
// next codebook-0 code, ending streams at EOS or their last frame.
func (m *Model) talkerStep(streams []*stream, rows [][]float32) error {
	h := m.Cfg.Talker.Hidden
	caches, counts := make([]*kv.Cache, len(streams)), make([]int, len(streams))
	var x []float32
	for i, s := range streams {
		caches[i], counts[i] = s.talkerKV, len(rows[i])/h
		x = append(x, rows[i]...)
	}
	// The prefill: Generate starts all streams together, and Step puts
	// the fresh ones first.
	first := !streams[0].stepped
	var each func(int, []float32)
	if first {
		m.traceInput(streams, counts, x)
		each = func(_ int, x []float32) { m.traceResidual(streams, counts, x) }
	}
	t0 := time.Now()
	out := run(m.talker, m.talkerNorm, caches, counts, x, m.codecHead, each, nil)
	t1 := time.Now()
	if first {
		charge(streams, t1.Sub(t0), func(s *Stats) *time.Duration { return &s.Prefill })
	} else {
		charge(streams, t1.Sub(t0), func(s *Stats) *time.Duration { return &s.Talker })
	}
	defer func() { charge(streams, time.Since(t1), func(s *Stats) *time.Duration { return &s.Sampler }) }()
	r := 0
	for i, s := range streams {
		s.stepped = true
		s.h = out.last[i]
		scores := m.talkerScores(out.logits[i], s)
		tok, err := s.talkerSeq.Sample(scores)
		if err != nil {
			return fmt.Errorf("talker: %w", err)
		}
		s.code0 = tok.ID
		s.code0s = append(s.code0s, tok.ID)
		if t := s.req.Trace; t != nil {
			if first {
				t.PrefillHidden = append([]float32(nil), out.normed[r*h:(r+counts[i])*h]...)
			}
			t.TalkerLogits = append(t.TalkerLogits, out.logits[i])
			t.TalkerScores = append(t.TalkerScores, scores)
			t.TalkerHidden = append(t.TalkerHidden, s.h)
			t.Code0 = append(t.Code0, tok.ID)
		}
		r += counts[i]
		switch {
		case tok.ID == m.Cfg.CodecEOS:
			s.done, s.stop = true, "eos"
		case len(s.codes) == s.req.MaxFrames:
			s.done, s.stop = true, "max_frames"
		}
	}
	return nil
}

func (m *Model) traceInput(streams []*stream, counts []int, x []float32) {
	h, r := m.Cfg.Talker.Hidden, 0
	for i, s := range streams {
		if t := s.req.Trace; t != nil {
			t.PrefillResidual = [][]float32{append([]float32(nil), x[r*h:(r+counts[i])*h]...)}
		}
		r += counts[i]
	}
}

func (m *Model) traceResidual(streams []*stream, counts []int, x []float32) {
	h, r := m.Cfg.Talker.Hidden, 0
	for i, s := range streams {
		if t := s.req.Trace; t != nil {
			t.PrefillResidual = append(t.PrefillResidual, append([]float32(nil), x[r*h:(r+counts[i])*h]...))
		}
		r += counts[i]
	}
}

// talkerScores applies the official token rules to a copy of the talker
// logits, in HF's order (TS §7): the repetition penalty over the
// codebook-0 codes generated so far (s < 0: s*p, else s/p), EOS masked
// before min_new_tokens, then every control id except EOS masked.
func (m *Model) talkerScores(logits []float32, s *stream) []float32 {
	c := m.Cfg
	sc := append([]float32(nil), logits...)
	if p := s.req.RepetitionPenalty; p != 1 {
		seen := map[int]bool{}
		for _, id := range s.code0s {
			if seen[id] {
				continue
			}
			seen[id] = true
			if v := float64(sc[id]); v < 0 {
				sc[id] = float32(v * p)
			} else {
				sc[id] = float32(v / p)
			}
		}
	}
	inf := float32(math.Inf(-1))
	if len(s.code0s) < minNewTokens || s.req.IgnoreEOS {
		sc[c.CodecEOS] = inf
	}
	// suppress_tokens: [vocab-1024, vocab) minus EOS (M:2059-2063).
	for id := max(0, c.Talker.Vocab-1024); id < c.Talker.Vocab; id++ {
		if id != c.CodecEOS {
			sc[id] = inf
		}
	}
	return sc
}
