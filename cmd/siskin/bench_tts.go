package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/bench"
	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// ttsBenchFlags are bench's --tts options.
type ttsBenchFlags struct {
	on, ignoreEOS, w8 bool
	frames            int
	text, voice       string
}

func (t *ttsBenchFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&t.on, "tts", false, "benchmark a Qwen3-TTS folder: text to codes to PCM, one stream")
	f.IntVar(&t.frames, "frames", 125, "--tts: frames per utterance (80 ms each)")
	f.BoolVar(&t.ignoreEOS, "ignore-eos", false, "--tts: mask EOS so every utterance runs --frames frames")
	f.StringVar(&t.text, "text", "The quick brown fox jumps over the lazy dog, and then it runs far away.", "--tts: the text spoken")
	f.BoolVar(&t.w8, "predictor-w8a8", false, "--tts: hold the code predictor's weights as int8 (w8a8), converted at load")
	f.StringVar(&t.voice, "voice", "", "--tts: the speaker (default: the model's first)")
}

// benchTTS is `siskin bench --tts -m DIR`.
func benchTTS(cmd *cobra.Command, dir string, t *ttsBenchFlags, opt bench.TTSOptions, asJSON bool) error {
	if t.frames < 1 {
		return fmt.Errorf("--frames must be at least 1, got %d", t.frames)
	}
	m, err := qwen3tts.LoadWith(dir, qwen3tts.Options{PredictorW8A8: t.w8})
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
	opt.IDs, opt.Voice = ids, qwen3tts.Voice{Speaker: voice}
	opt.Frames, opt.IgnoreEOS = t.frames, t.ignoreEOS
	res, err := bench.RunTTS(m, dec, dir, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if asJSON {
		return bench.WriteTTSJSON(cmd.OutOrStdout(), res)
	}
	return bench.WriteTTSTable(cmd.OutOrStdout(), res)
}
