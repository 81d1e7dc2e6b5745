package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/bench"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/tensor"
)

// ttsBenchFlags are bench's --tts options.
type ttsBenchFlags struct {
	on, ignoreEOS, w8, parity, vsFloat bool
	serve, nonStreaming                bool
	frames, codecChunk                 int
	concurrency                        []int
	text, voice, predictor, talker     string
}

func (t *ttsBenchFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&t.on, "tts", false, "benchmark a Qwen3-TTS folder: text to codes to PCM")
	f.IntVar(&t.frames, "frames", 125, "--tts: frames per utterance (80 ms each)")
	f.IntVar(&t.codecChunk, "codec-chunk", 0, "--tts: frames each codec push after an utterance's first frame waits for (0: as serve's pipeline does, codec LaterChunk: 2, more once the audio is ahead of real time; 1 pushes every frame alone)")
	f.BoolVar(&t.ignoreEOS, "ignore-eos", false, "--tts: mask EOS so every utterance runs --frames frames")
	f.StringVar(&t.text, "text", "The quick brown fox jumps over the lazy dog, and then it runs far away.", "--tts: the text spoken")
	f.BoolVar(&t.w8, "predictor-w8a8", false, "--tts: hold the code predictor's weights as int8 (w8a8), converted at load (--predictor w8a8)")
	f.StringVar(&t.predictor, "predictor", "", "--tts: the code predictor's weights, converted at load: int8 (q8_0: a scale per 32 weights, lm heads kept), w8a8 or w4a8 (weight paths: a scale per 128), q4_k (4-bit, a scale and a min per 32; rows not a multiple of 256 wide stay as they are); under w4a8 and q4_k the lm heads become q8_0 (default: the file's)")
	f.StringVar(&t.talker, "talker", "", "--tts: the talker's weights, converted at load: int8 (q8_0), w8a8, w4a8 or q4_k (default: the file's)")
	f.BoolVar(&t.parity, "predictor-parity-check", false, "--tts: keep a float32 code predictor beside the converted one and report their parity (in situ on every 8th frame, and teacher-forced on a float32 utterance beside plain per-row int8 weights)")
	f.BoolVar(&t.vsFloat, "vs-float32", false, "--tts: also time the float32 code predictor, alternating repetitions with the converted one")
	f.IntSliceVar(&t.concurrency, "concurrency", []int{1}, "--tts: utterances run together, one test each (comma-separated: 1,4); --url: requests per burst (default 1,8)")
	f.StringVar(&t.voice, "voice", "", "--tts: the speaker (default: the model's first)")
	f.BoolVar(&t.nonStreaming, "non-streaming-mode", true, "--tts: feed the whole text in the prompt, as serve does unless a request says otherwise (false: one text token enters per frame, so the prefill and the time to first audio do not grow with the text)")
	f.BoolVar(&t.serve, "serve", false, "--tts: time to first audio through POST /v1/audio/speech (stream_format audio) of an in-process server, -r voices each new then cached, with where the time went")
}

// weightType parses a --predictor/--talker value ("" is the file's type).
func weightType(flag, v string) (tensor.Type, error) {
	switch strings.ToLower(v) {
	case "", "f32", "float":
		return 0, nil
	case "int8":
		return tensor.Q8_0, nil
	}
	if t, ok := tensor.ParseType(v); ok && (t == tensor.Q8_0 || t == tensor.W8A8 || t == tensor.W4A8 || t == tensor.Q4_K) {
		return t, nil
	}
	return 0, fmt.Errorf("%s %q: want int8 (q8_0), w8a8, w4a8 or q4_k", flag, v)
}

// loadOptions turns the flags into qwen3tts load options.
func (t *ttsBenchFlags) loadOptions() (qwen3tts.Options, error) {
	pred := t.predictor
	if t.w8 && pred == "" {
		pred = "w8a8"
	}
	o, err := weightOptions("--predictor", pred, "--talker", t.talker)
	if err != nil {
		return o, err
	}
	if (t.parity || t.vsFloat) && o.Predictor == 0 {
		return o, fmt.Errorf("--predictor-parity-check and --vs-float32 compare a converted predictor with float32: give --predictor int8, w8a8, w4a8 or q4_k")
	}
	o.ParityCheck, o.RowInt8Baseline = t.parity || t.vsFloat, t.parity
	return o, nil
}

// weightOptions parses the predictor and talker weight flags (named
// predFlag and talkerFlag in errors).
func weightOptions(predFlag, pred, talkerFlag, talker string) (qwen3tts.Options, error) {
	var o qwen3tts.Options
	var err error
	if o.Predictor, err = weightType(predFlag, pred); err != nil {
		return o, err
	}
	o.Talker, err = weightType(talkerFlag, talker)
	return o, err
}

// benchTTS is `siskin bench --tts -m DIR`.
func benchTTS(cmd *cobra.Command, dir string, t *ttsBenchFlags, opt bench.TTSOptions, asJSON bool) error {
	if t.frames < 1 {
		return fmt.Errorf("--frames must be at least 1, got %d", t.frames)
	}
	if t.codecChunk < 0 || t.codecChunk > codec.DefaultChunk {
		return fmt.Errorf("--codec-chunk must be 0 (adaptive) or 1 to %d frames, got %d", codec.DefaultChunk, t.codecChunk)
	}
	for _, n := range t.concurrency {
		if n < 1 || n > 64 {
			return fmt.Errorf("--concurrency %d: want 1 to 64 utterances", n)
		}
	}
	o, err := t.loadOptions()
	if err != nil {
		return err
	}
	if t.serve {
		return benchTTSServe(cmd, dir, t, o, opt, asJSON)
	}
	m, err := qwen3tts.LoadWith(dir, o)
	if err != nil {
		return err
	}
	defer m.Close()
	dec, err := (&audioOptions{}).loadSpeechCodec(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	ids, err := speakIDs(&speakOptions{modelPath: dir, input: t.text})
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	voice := t.voice
	if voice == "" {
		voice = m.Cfg.SupportedSpeakers()[0]
	}
	opt.IDs, opt.Voice = ids, qwen3tts.Voice{Speaker: voice, NonStreaming: t.nonStreaming}
	opt.Frames, opt.IgnoreEOS, opt.AlternateReference = t.frames, t.ignoreEOS, t.vsFloat
	opt.CodecChunk = t.codecChunk
	var results []*bench.TTSResult
	for i, n := range t.concurrency {
		opt.Streams = n
		if i > 0 { // the machine's floors are measured once
			opt.BandwidthBytes, opt.PeakRuns = -1, -1
		}
		res, err := bench.RunTTS(m, dec, dir, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		results = append(results, res)
	}
	if t.parity {
		if err := addParity(m, results[0], opt); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return writeTTSResults(cmd, results, asJSON)
}

// addParity reports the in-situ check of the timed runs and a
// teacher-forced comparison on a float32 utterance of --frames frames:
// the converted predictor and plain per-row int8 weights against float32.
func addParity(m *qwen3tts.Model, res *bench.TTSResult, opt bench.TTSOptions) error {
	pr := func(name string, p qwen3tts.Parity) bench.ParityResult {
		return bench.ParityResult{Name: name, Steps: p.Steps, Top1: p.Top1, Top5: p.Top5, MaxLogitDiff: p.MaxLogitDiff, KL: p.KL}
	}
	if p, ok := m.PredictorParityStats(); ok {
		res.Parity = append(res.Parity, pr("in situ, every 8th frame of the timed runs", p))
	}
	req := m.Cfg.NewRequest(opt.IDs, opt.Voice)
	req.MaxFrames, req.IgnoreEOS, req.Seed, req.Seeded = opt.Frames, opt.IgnoreEOS, opt.Seed, true
	ours, base, err := m.TeacherForcedParity(req)
	if err != nil {
		return err
	}
	res.Parity = append(res.Parity, pr("teacher-forced, this predictor", ours), pr("teacher-forced, per-row absmax int8 weights", base))
	return nil
}

// writeTTSResults prints the tests, and with several concurrencies each
// one's audio per second against the first's.
func writeTTSResults(cmd *cobra.Command, results []*bench.TTSResult, asJSON bool) error {
	w := cmd.OutOrStdout()
	if asJSON {
		if len(results) == 1 {
			return bench.WriteTTSJSON(w, results[0])
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := bench.WriteTTSTable(w, r); err != nil {
			return err
		}
	}
	if len(results) > 1 {
		base := results[0]
		fmt.Fprintln(w)
		for _, r := range results {
			fmt.Fprintf(w, "%2d streams: %.3f audio s per s = %.2fx %d stream(s)\n", r.Streams, r.AudioPerSecond, r.AudioPerSecond/base.AudioPerSecond, base.Streams)
		}
	}
	return nil
}
