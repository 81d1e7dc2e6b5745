package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// TTSOptions controls RunTTS.
type TTSOptions struct {
	IDs       []int // the wrapped, tokenized text (qwen3tts.Config.BuildPrompt)
	Voice     qwen3tts.Voice
	Frames    int  // frames per utterance (the most, without IgnoreEOS)
	IgnoreEOS bool // run Frames frames whatever the talker picks
	Threads   int
	Reps      int
	Seed      uint64
	// Streams is how many utterances run together (batched talker and
	// predictor steps, one codec stream each); 0 means 1.
	Streams int
	// CodecChunk is the frames each codec push after an utterance's first
	// frame waits for; 0: the codec's LaterChunk, as serve's pipeline.
	CodecChunk int
	// AlternateReference times the float32 reference predictor too
	// (loaded with qwen3tts.Options.ParityCheck), alternating with the
	// model's own repetition by repetition.
	AlternateReference bool
	// Probes: bandwidth buffer and passes (BandwidthBytes < 0 skips it)
	// and FMA-peak passes (< 0 skips it).
	BandwidthBytes int64
	BandwidthRuns  int
	PeakRuns       int
	// Profile, if set, wraps the timed repetitions (see Options.Profile).
	Profile func(test string) (stop func() error, err error)
}

// TTSResult is siskin bench --tts: medians over the repetitions, per
// frame times in ms, and the floors the machine sets.
type TTSResult struct {
	Model   string `json:"model_filename"`
	Test    string `json:"test"` // tts125, tts125x4 for 4 streams
	Threads int    `json:"n_threads"`
	Streams int    `json:"streams"`
	Reps    int    `json:"repetitions"`
	Frames  int    `json:"frames"` // of the median repetition
	Stop    string `json:"stop"`
	// Real-time factor: wall time over audio time (0.08 s a frame).
	RTF    float64 `json:"rtf"`
	RTFMin float64 `json:"rtf_min"`
	RTFMax float64 `json:"rtf_max"`
	// Audio seconds made per wall second, all streams together.
	AudioPerSecond float64 `json:"audio_seconds_per_second"`
	FirstAudioMS   float64 `json:"first_audio_ms"` // call to the first frame's PCM
	PrefillMS      float64 `json:"prefill_ms"`     // the talker's prompt step
	// Per frame step (prefill aside; a step makes one frame of each
	// stream).
	TalkerMS    float64 `json:"talker_ms_per_frame"`
	PredictorMS float64 `json:"predictor_ms_per_frame"`
	SamplerMS   float64 `json:"sampler_ms_per_frame"`
	CodecMS     float64 `json:"codec_ms_per_frame"`
	// The same utterances made alone: talker and predictor without the
	// codec, then the codec alone on their frames.
	AloneTalkerMS    float64 `json:"alone_talker_ms_per_frame"`
	AlonePredictorMS float64 `json:"alone_predictor_ms_per_frame"`
	AloneCodecMS     float64 `json:"alone_codec_ms_per_frame"`
	// With AlternateReference: the float32 predictor's ms per frame in the
	// alternate repetitions (without the codec), and AlonePredictorMS over
	// it.
	RefPredictorMS float64 `json:"float32_predictor_ms_per_frame,omitempty"`
	PredictorRatio float64 `json:"predictor_over_float32,omitempty"`
	// Parity of the code predictor against float32 (bench's
	// --predictor-parity-check), set by the caller.
	Parity []ParityResult `json:"predictor_parity,omitempty"`
	// Memory floor of talker + predictor: weight bytes read per frame over
	// the measured read bandwidth.
	TalkerBytesPerFrame    int64   `json:"talker_bytes_per_frame"`
	PredictorBytesPerFrame int64   `json:"predictor_bytes_per_frame"`
	WeightBytesPerAudioSec float64 `json:"weight_bytes_per_audio_second"`
	BandwidthGBs           float64 `json:"bandwidth_gbs"`
	ModelFloorMS           float64 `json:"model_floor_ms_per_frame"`
	ModelShare             float64 `json:"model_floor_share"` // floor / (talker+predictor alone)
	// Arithmetic floor of the codec: FLOPs per frame over the measured
	// FP32 FMA peak (kernels.FMAPeak, probed after each codec-alone run
	// unless profiling: the median); the share is of the codec alone (the
	// median of the runs' shares, each against the probe after it).
	CodecGFLOPPerFrame float64 `json:"codec_gflop_per_frame"`
	PeakGFLOPs         float64 `json:"fp32_peak_gflops"`
	CodecFloorMS       float64 `json:"codec_floor_ms_per_frame"`
	CodecShare         float64 `json:"codec_floor_share"`
	FloorRTF           float64 `json:"floor_rtf"` // the larger floor, per 80 ms frame (the two run side by side)
}

// ParityResult is one code predictor parity figure set against float32.
type ParityResult struct {
	Name         string  `json:"name"` // what was compared and how
	Steps        int     `json:"sub_steps"`
	Top1         float64 `json:"top1_agreement"`
	Top5         float64 `json:"top5_overlap"`
	MaxLogitDiff float64 `json:"max_logit_diff"`
	KL           float64 `json:"kl"`
}

const frameSeconds = 0.08

// ttsRun is one timed utterance.
type ttsRun struct {
	frames      int // of the first stream
	allFrames   int // of all streams
	stop        string
	wall, first time.Duration
	stats       qwen3tts.Stats
	codec       time.Duration
	codes       [][]int // the first stream's frames, when run without the codec
	chunks      []int   // the first stream's codec pushes, in frames
}

// RunTTS measures speech generation: text to codes (talker, predictor,
// sampling) and codes to PCM (the codec fed each utterance's frames as
// they come, beside the talker, as serve's pipeline does), after an
// untimed 4-frame warm-up that maps the weights. Each repetition is
// followed by the same utterance made alone: its codes without the codec,
// then those codes through the codec alone in the same chunks; the
// floors' shares are of those times.
func RunTTS(m *qwen3tts.Model, dec *codec.Decoder, name string, opt TTSOptions) (*TTSResult, error) {
	if opt.Frames < 1 || opt.Reps < 1 {
		return nil, fmt.Errorf("frames (%d) and repetitions (%d) must be at least 1", opt.Frames, opt.Reps)
	}
	if opt.Threads > 0 {
		kernels.SetThreads(opt.Threads)
	}
	opt.Streams = max(opt.Streams, 1)
	if _, err := ttsOnce(m, dec, opt, min(opt.Frames, 4), opt.Seed, false); err != nil {
		return nil, err
	}
	test := fmt.Sprintf("tts%d", opt.Frames)
	if opt.Streams > 1 {
		test += fmt.Sprintf("x%d", opt.Streams)
	}
	runs, alone, refs := make([]ttsRun, opt.Reps), make([]ttsRun, opt.Reps), make([]ttsRun, 0, opt.Reps)
	// The FMA peak is probed after each codec-alone run, so the codec's
	// share compares the two under the same machine load (a probe minutes
	// apart read 137 and 171 GFLOP/s on one shared VM); not inside a
	// profile, which would show the probe's loop.
	alternatePeak := opt.PeakRuns >= 0 && opt.Profile == nil
	var peaks []float64
	err := (&Options{Profile: opt.Profile}).timed(test, func() error {
		for i := range runs {
			var err error
			seed := opt.Seed + uint64(i)
			if runs[i], err = ttsOnce(m, dec, opt, opt.Frames, seed, false); err != nil {
				return err
			}
			if alone[i], err = ttsAlone(m, dec, opt, seed, false, runs[i].chunks); err != nil {
				return err
			}
			if alternatePeak {
				runtime.GC() // not the run's garbage collection beside the probe
				peaks = append(peaks, MeasureFMAPeak(kernels.Threads(), 5).Median)
			}
			if opt.AlternateReference {
				r, err := ttsAlone(m, nil, opt, seed, true, nil)
				if err != nil {
					return err
				}
				refs = append(refs, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := summarize(runs)
	res.Model, res.Test, res.Threads, res.Reps, res.Streams = name, test, kernels.Threads(), opt.Reps, opt.Streams
	a := summarize(alone)
	res.AloneTalkerMS, res.AlonePredictorMS, res.AloneCodecMS = a.TalkerMS, a.PredictorMS, a.CodecMS
	if len(refs) > 0 {
		res.RefPredictorMS = summarize(refs).PredictorMS
		res.PredictorRatio = res.AlonePredictorMS / res.RefPredictorMS
	}
	return res, floors(res, m, dec, opt, alone, peaks)
}

// floors measures the machine's floors and the shares of them reached by
// the talker and predictor alone and by the codec alone; they run side by
// side, so the real-time factor's floor is the larger of the two. peaks,
// when given, are FMA peaks probed right after each of the alone runs:
// the peak is their median and the codec's share the median of the runs'
// own shares.
func floors(res *TTSResult, m *qwen3tts.Model, dec *codec.Decoder, opt TTSOptions, alone []ttsRun, peaks []float64) error {
	res.TalkerBytesPerFrame, res.PredictorBytesPerFrame = m.ReadBytesPerFrame()
	res.WeightBytesPerAudioSec = float64(res.TalkerBytesPerFrame+res.PredictorBytesPerFrame) / frameSeconds
	res.CodecGFLOPPerFrame = dec.FLOPsPerFrame() / 1e9
	if opt.BandwidthBytes >= 0 {
		bw, err := MeasureBandwidth(defaultInt64(opt.BandwidthBytes, 1<<30), res.Threads, defaultInt(opt.BandwidthRuns, 5))
		if err != nil {
			return err
		}
		res.BandwidthGBs = bw.Median
		res.ModelFloorMS = float64(res.TalkerBytesPerFrame+res.PredictorBytesPerFrame) / (bw.Median * 1e9) * 1e3
		res.ModelShare = res.ModelFloorMS / (res.AloneTalkerMS + res.AlonePredictorMS)
	}
	switch {
	case len(peaks) > 0: // one per alone run
		shares := make([]float64, len(alone))
		for i, r := range alone {
			shares[i] = res.CodecGFLOPPerFrame / peaks[i] / (r.codec.Seconds() / float64(r.frames))
		}
		slices.Sort(shares)
		res.CodecShare = median(shares)
		res.PeakGFLOPs = median(slices.Sorted(slices.Values(peaks)))
	case opt.PeakRuns >= 0:
		res.PeakGFLOPs = MeasureFMAPeak(res.Threads, defaultInt(opt.PeakRuns, 5)).Median
		res.CodecShare = res.CodecGFLOPPerFrame / res.PeakGFLOPs * 1e3 / res.AloneCodecMS
	}
	if res.PeakGFLOPs > 0 {
		res.CodecFloorMS = res.CodecGFLOPPerFrame / res.PeakGFLOPs * 1e3
	}
	res.FloorRTF = max(res.ModelFloorMS, res.CodecFloorMS) / (frameSeconds * 1e3)
	return nil
}

// ttsAlone makes the utterances of ttsOnce without the codec (ref: with
// the float32 reference predictor), then, with dec, pushes the first
// one's frames through a codec stream alone in chunks (the frames of
// each push of the same utterance made beside the talker; past them,
// the rest at once), timing that as the run's codec.
func ttsAlone(m *qwen3tts.Model, dec *codec.Decoder, opt TTSOptions, seed uint64, ref bool, chunks []int) (ttsRun, error) {
	r, err := ttsOnce(m, nil, opt, opt.Frames, seed, ref)
	if err != nil || dec == nil {
		return r, err
	}
	s := takeStream(dec)
	defer putStream(dec, s)
	var codes []int32
	var pcm []float32
	start := time.Now()
	for i, f := range r.codes {
		for _, c := range f {
			codes = append(codes, int32(c))
		}
		if (len(chunks) > 0 && len(codes) >= chunks[0]*len(f)) || i == len(r.codes)-1 {
			if len(chunks) > 0 {
				chunks = chunks[1:]
			}
			if pcm, err = s.Push(pcm[:0], codes); err != nil {
				return r, err
			}
			codes = codes[:0]
		}
	}
	r.codec = time.Since(start)
	return r, nil
}

func defaultInt(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

func defaultInt64(v, d int64) int64 {
	if v <= 0 {
		return d
	}
	return v
}

// ttsOnce generates opt.Streams utterances of at most frames frames
// together, pushing their frames through each one's codec stream as they
// come (see codecSink), or with dec nil keeping the first one's frames in
// r.codes; ref runs the float32 reference predictor.
func ttsOnce(m *qwen3tts.Model, dec *codec.Decoder, opt TTSOptions, frames int, seed uint64, ref bool) (ttsRun, error) {
	var r ttsRun
	reqs := make([]*qwen3tts.Request, opt.Streams)
	stats := make([]qwen3tts.Stats, opt.Streams)
	flush := make([]func() error, opt.Streams)
	var mu sync.Mutex // r's codec figures
	var beside sync.Mutex
	start := time.Now()
	for i := range reqs {
		req := m.Cfg.NewRequest(opt.IDs, opt.Voice)
		req.MaxFrames, req.IgnoreEOS, req.Seed, req.Seeded = frames, opt.IgnoreEOS, seed+uint64(i)<<32, true
		req.Stats, req.ReferencePredictor = &stats[i], ref
		reqs[i] = req
		if dec == nil {
			flush[i] = func() error { return nil }
			if i == 0 {
				req.OnFrame = func(f []int) error {
					r.codes = append(r.codes, slices.Clone(f))
					r.frames++
					return nil
				}
			}
			continue
		}
		sink := newCodecSink(dec, &r, &mu, &beside, i == 0, start, opt.CodecChunk)
		req.OnFrame, flush[i] = sink.onFrame, sink.flush
	}
	res, err := m.Generate(reqs)
	for _, f := range flush {
		err = cmp.Or(err, f())
	}
	if err != nil {
		return r, err
	}
	r.wall, r.stop, r.stats = time.Since(start), res[0].Stop, stats[0]
	if r.frames == 0 {
		return r, fmt.Errorf("the talker stopped (%s) before the first frame", r.stop)
	}
	return r, nil
}

// codecSink is an utterance's codec: a stream of its own on a goroutine
// of its own, so it decodes while the talker and predictor make the next
// frames (as serve's pipeline does; the two share the kernels' threads).
// The first frame goes alone, synchronously; later ones chunk at a time,
// or all that queued while the codec was busy, holding beside (shared by
// the utterances' sinks: one such chunk at a time, as the engine's codec
// stage does). The codec's busy time is added to r.codec, its frames to
// r's counts (first: the stream that r's per-frame figures follow),
// under mu.
type codecSink struct {
	s             *codec.Stream
	dec           *codec.Decoder
	groups, chunk int       // chunk 0: dec.LaterChunk
	decoded       int       // frames decoded, under mu
	firstAt       time.Time // when the first frame's audio was out, under mu
	mu            *sync.Mutex
	work          chan codecPush // chunks to decode
	idle          chan error     // holds a token (the last push's error) while the codec is idle
	queued        []int32
	started       bool // the first frame has gone to the codec
}

// codecPush is a chunk for the sink's goroutine; beside: decoded while
// the talker runs (the first and last are not).
type codecPush struct {
	codes  []int32
	beside bool
}

func newCodecSink(dec *codec.Decoder, r *ttsRun, mu, beside *sync.Mutex, first bool, start time.Time, chunk int) *codecSink {
	c := &codecSink{s: takeStream(dec), dec: dec, groups: dec.Config().Quantizers, chunk: chunk, mu: mu,
		work: make(chan codecPush), idle: make(chan error, 1)}
	c.idle <- nil
	go func() {
		var pcm []float32
		for p := range c.work {
			if p.beside {
				beside.Lock()
			}
			t := time.Now()
			var err error
			pcm, err = c.s.Push(pcm[:0], p.codes)
			if p.beside {
				beside.Unlock()
			}
			n := len(p.codes) / c.groups
			mu.Lock()
			if r.allFrames == 0 {
				r.first = time.Since(start)
			}
			if c.decoded == 0 {
				c.firstAt = time.Now()
			}
			c.decoded += n
			if first {
				r.chunks = append(r.chunks, n)
			}
			r.allFrames += n
			if first {
				r.frames += n
			}
			r.codec += time.Since(t)
			mu.Unlock()
			c.idle <- err
		}
	}()
	return c
}

// hand gives the queued frames to the idle codec (err: the token taken
// from idle), or puts the token back if there is nothing to do.
func (c *codecSink) hand(err error, beside bool) error {
	if err == nil && len(c.queued) > 0 {
		c.started = true
		c.work <- codecPush{c.queued, beside}
		c.queued = nil
		return nil
	}
	c.idle <- err
	return err
}

// onFrame is the utterance's qwen3tts.Request.OnFrame.
func (c *codecSink) onFrame(frame []int) error {
	for _, code := range frame {
		c.queued = append(c.queued, int32(code))
	}
	if !c.started { // the first audio, alone and with every thread
		if err := c.hand(<-c.idle, false); err != nil {
			return err
		}
		err := <-c.idle
		c.idle <- err
		return err
	}
	want := c.chunk
	if want == 0 {
		c.mu.Lock()
		want = c.dec.LaterChunk(c.decoded, time.Since(c.firstAt))
		c.mu.Unlock()
	}
	if len(c.queued) < want*c.groups {
		return nil
	}
	select {
	case err := <-c.idle:
		return c.hand(err, true)
	default: // busy: the frames wait for its next push
		return nil
	}
}

// flush decodes the frames left once the utterance has ended and stops
// the goroutine.
func (c *codecSink) flush() error {
	err := c.hand(<-c.idle, false)
	err = cmp.Or(err, <-c.idle)
	close(c.work)
	putStream(c.dec, c.s)
	return err
}

// streamSpares keeps codec streams from one run for the next, as serve's
// pipeline keeps ended utterances' streams: a run's codec time does not
// include making a stream's tens of MB fresh (about 11 us a 4 KiB page on
// the 2-vCPU VM this was measured on).
var streamSpares struct {
	sync.Mutex
	m map[*codec.Decoder][]*codec.Stream
}

// takeStream returns a spare stream of dec at frame 0, or a new one.
func takeStream(dec *codec.Decoder) *codec.Stream {
	streamSpares.Lock()
	defer streamSpares.Unlock()
	if n := len(streamSpares.m[dec]); n > 0 {
		s := streamSpares.m[dec][n-1]
		streamSpares.m[dec] = streamSpares.m[dec][:n-1]
		s.Reset()
		return s
	}
	return dec.NewStream(codec.DefaultChunk)
}

// putStream keeps s, a stream of dec, for a later run.
func putStream(dec *codec.Decoder, s *codec.Stream) {
	streamSpares.Lock()
	defer streamSpares.Unlock()
	if streamSpares.m == nil {
		streamSpares.m = map[*codec.Decoder][]*codec.Stream{}
	}
	streamSpares.m[dec] = append(streamSpares.m[dec], s)
}

// summarize takes the median of each figure over the runs.
func summarize(runs []ttsRun) *TTSResult {
	med := func(f func(r ttsRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return median(v)
	}
	ms := func(d time.Duration, r ttsRun) float64 { return d.Seconds() * 1e3 / float64(r.frames) }
	rtf := func(r ttsRun) float64 { return r.wall.Seconds() / (float64(r.frames) * frameSeconds) }
	res := &TTSResult{
		RTF:            med(rtf),
		AudioPerSecond: med(func(r ttsRun) float64 { return float64(r.allFrames) * frameSeconds / r.wall.Seconds() }),
		FirstAudioMS:   med(func(r ttsRun) float64 { return r.first.Seconds() * 1e3 }),
		PrefillMS:      med(func(r ttsRun) float64 { return r.stats.Prefill.Seconds() * 1e3 }),
		TalkerMS:       med(func(r ttsRun) float64 { return ms(r.stats.Talker, r) }),
		PredictorMS:    med(func(r ttsRun) float64 { return ms(r.stats.Predictor, r) }),
		SamplerMS:      med(func(r ttsRun) float64 { return ms(r.stats.Sampler, r) }),
		CodecMS:        med(func(r ttsRun) float64 { return ms(r.codec, r) }),
	}
	res.RTFMin, res.RTFMax = rtf(runs[0]), rtf(runs[0])
	for _, r := range runs {
		res.RTFMin, res.RTFMax = min(res.RTFMin, rtf(r)), max(res.RTFMax, rtf(r))
	}
	mid := runs[len(runs)/2]
	res.Frames, res.Stop = mid.frames, mid.stop
	return res
}

// WriteTTSJSON writes r as one JSON object.
func WriteTTSJSON(w io.Writer, r *TTSResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTTSTable writes r for people.
func WriteTTSTable(w io.Writer, r *TTSResult) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("%s  %s  threads %d  streams %d  %d frames (%.2f s of audio, stop %s), median of %d", r.Model, r.Test, r.Threads, r.Streams, r.Frames, float64(r.Frames)*frameSeconds, r.Stop, r.Reps)
	p("real-time factor     %.3f  [%.3f-%.3f]  (floor %.3f, one stream)", r.RTF, r.RTFMin, r.RTFMax, r.FloorRTF)
	p("audio per second     %.3f s  (all %d streams)", r.AudioPerSecond, r.Streams)
	p("time to first audio  %.1f ms  (talker prefill %.1f ms)", r.FirstAudioMS, r.PrefillMS)
	p("ms per frame step    talker %.2f  predictor %.2f  sampler %.2f  codec %.2f  (side by side, sharing the threads)", r.TalkerMS, r.PredictorMS, r.SamplerMS, r.CodecMS)
	p("alone                talker %.2f  predictor %.2f  codec %.2f  (the same utterances: codes without the codec, then the codec)", r.AloneTalkerMS, r.AlonePredictorMS, r.AloneCodecMS)
	if r.RefPredictorMS > 0 {
		p("float32 predictor    %.2f ms per frame step (alone, alternate repetitions); this predictor takes %.3fx", r.RefPredictorMS, r.PredictorRatio)
	}
	if r.BandwidthGBs > 0 {
		p("talker+predictor     %.1f MB read per frame (%.2f GB per audio second) / %.1f GB/s read bandwidth = floor %.2f ms/frame; alone reached %.0f%%",
			float64(r.TalkerBytesPerFrame+r.PredictorBytesPerFrame)/1e6, r.WeightBytesPerAudioSec/1e9, r.BandwidthGBs, r.ModelFloorMS, 100*r.ModelShare)
	}
	if r.PeakGFLOPs > 0 {
		p("codec                %.2f GFLOP per frame / %.1f GFLOP/s FP32 FMA peak = floor %.2f ms/frame; alone reached %.0f%%",
			r.CodecGFLOPPerFrame, r.PeakGFLOPs, r.CodecFloorMS, 100*r.CodecShare)
	}
	for _, q := range r.Parity {
		p("parity vs float32    %s: %d sub-steps, top-1 %.4f, top-5 overlap %.4f, max logit diff %.4g, KL %.3g",
			q.Name, q.Steps, q.Top1, q.Top5, q.MaxLogitDiff, q.KL)
	}
	return nil
}
