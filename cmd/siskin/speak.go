package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/tokenizer"
)

// speakOptions are the flags of siskin speak.
type speakOptions struct {
	modelPath, input, inputIDs string
	voice, language            string
	seed                       uint64
	maxFrames, threads         int
	temp, subTemp, repPenalty  float64
	nonStreaming               bool
	codesOut                   string
}

func speakCmd() *cobra.Command {
	var o speakOptions
	cmd := &cobra.Command{
		Use:   "speak -m DIR (--input TEXT | --input-ids 1,2,... | --codes-in FILE.json) [--voice NAME] [--language L] [-o out.wav] [--codes-out FILE.json]",
		Short: "Speak a text with a Qwen3-TTS CustomVoice model, or decode codec codes to audio",
		Long: `Run the Qwen3-TTS talker and code predictor on a text, then write the audio codes
(one frame of 16 codes per 80 ms, as {"codes": [[16 ints], ...]}) to --codes-out and
the 24 kHz mono audio to -o with the model's speech tokenizer (DIR/speech_tokenizer/,
DIR itself, or --codec) as WAV, raw PCM (s16le) or FLAC. Without -o or --codes-out
the codes go to stdout. --codes-in FILE.json decodes given codes instead of
generating them.

--input is wrapped as "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"
and tokenized with the folder's tokenizer; --input-ids gives that whole
wrapped id sequence instead (no tokenizer needed). Sampling defaults come
from generation_config.json; --temp 0 makes the talker greedy and
--subtalker-temp 0 the code predictor. --non-streaming-mode (the default,
as the official generate_custom_voice) feeds the whole text in the prompt;
--non-streaming-mode=false feeds one text token per frame.`,
		Args: cobra.NoArgs,
	}
	ao := addAudioFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if ao.codesIn != "" {
			if o.input != "" || o.inputIDs != "" {
				return fmt.Errorf("give --codes-in or a text (--input, --input-ids), not both")
			}
			return speakCodesIn(cmd, o.modelPath, ao)
		}
		if o.input == "" && o.inputIDs == "" {
			return fmt.Errorf("give a text (--input TEXT or --input-ids) or codes to decode (--codes-in FILE.json)")
		}
		// Check the audio side before the talker runs.
		var wav func([][]int) error
		if ao.out != "" {
			format, err := ao.outputFormat()
			if err != nil {
				return err
			}
			dec, err := ao.loadSpeechCodec(o.modelPath)
			if err != nil {
				return err
			}
			wav = func(codes [][]int) error { return writeSpeechAudio(cmd, dec, frameCodes(codes), format, ao) }
		}
		codes, err := generateCodes(cmd, &o)
		if err != nil {
			return err
		}
		if o.codesOut != "" || wav == nil {
			if err := writeCodesFile(cmd.OutOrStdout(), o.codesOut, codes); err != nil {
				return err
			}
		}
		if wav != nil {
			if len(codes) == 0 {
				return fmt.Errorf("the talker ended the utterance before its first frame: no audio to write")
			}
			return wav(codes)
		}
		return nil
	}
	f := cmd.Flags()
	f.StringVarP(&o.modelPath, "model", "m", "", "Qwen3-TTS CustomVoice folder (or, with --codes-in, a speech tokenizer folder)")
	f.StringVar(&o.input, "input", "", "text to speak")
	f.StringVar(&o.inputIDs, "input-ids", "", "the wrapped text as comma-separated token ids (instead of --input)")
	f.StringVar(&o.voice, "voice", "", "speaker name (default: the first in the model's list)")
	f.StringVar(&o.language, "language", "auto", "language name, or auto")
	f.Uint64Var(&o.seed, "seed", 0, "random seed (default: drawn, and printed)")
	f.IntVar(&o.maxFrames, "max-frames", 0, "most frames to generate (default: generation_config.json's max_new_tokens - 1)")
	f.Float64Var(&o.temp, "temp", 0, "talker temperature; 0 is greedy (default: generation_config.json)")
	f.Float64Var(&o.subTemp, "subtalker-temp", 0, "code predictor temperature; 0 is greedy (default: generation_config.json)")
	f.Float64Var(&o.repPenalty, "repetition-penalty", 0, "repetition penalty on codebook-0 codes (default: generation_config.json)")
	f.BoolVar(&o.nonStreaming, "non-streaming-mode", true, "feed the whole text in the prompt (false: one text token per frame)")
	f.StringVar(&o.codesOut, "codes-out", "", "write the codes to this JSON file (default: stdout when there is no -o)")
	f.IntVarP(&o.threads, "threads", "t", 0, "threads (default: all cores)")
	return cmd
}

// generateCodes loads the model, builds the request from the flags and
// returns the frames (one row of 16 codes each).
func generateCodes(cmd *cobra.Command, o *speakOptions) ([][]int, error) {
	if o.modelPath == "" {
		return nil, fmt.Errorf("-m DIR is required (a Qwen3-TTS CustomVoice folder)")
	}
	if o.input != "" && o.inputIDs != "" {
		return nil, fmt.Errorf("give one of --input TEXT or --input-ids, not both")
	}
	if o.threads > 0 {
		kernels.SetThreads(o.threads)
	}
	m, err := qwen3tts.Load(o.modelPath)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	ids, err := speakIDs(o)
	if err != nil {
		return nil, err
	}
	voice := o.voice
	if voice == "" {
		voice = m.Cfg.SupportedSpeakers()[0]
		fmt.Fprintf(cmd.ErrOrStderr(), "voice: %s\n", voice)
	}
	req := m.Cfg.NewRequest(ids, qwen3tts.Voice{Speaker: voice, Language: o.language, NonStreaming: o.nonStreaming})
	fl := cmd.Flags()
	if fl.Changed("temp") {
		req.Talker.Temperature, req.Talker.Greedy = o.temp, o.temp == 0
	}
	if fl.Changed("subtalker-temp") {
		req.Predictor.Temperature, req.Predictor.Greedy = o.subTemp, o.subTemp == 0
	}
	if fl.Changed("repetition-penalty") {
		req.RepetitionPenalty = o.repPenalty
	}
	if fl.Changed("max-frames") {
		req.MaxFrames = o.maxFrames
	}
	req.Seed, req.Seeded = o.seed, fl.Changed("seed")
	res, err := m.Generate([]*qwen3tts.Request{req})
	if err != nil {
		return nil, err
	}
	r := res[0]
	if !req.Seeded && !(req.Talker.Greedy && req.Predictor.Greedy) {
		fmt.Fprintf(cmd.ErrOrStderr(), "seed: %d\n", r.Seed)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%d frames (%.2f s), stopped at %s\n", len(r.Codes), float64(len(r.Codes))*0.08, r.Stop)
	return r.Codes, nil
}

// speakIDs is the wrapped text's ids: given, or tokenized from --input.
func speakIDs(o *speakOptions) ([]int, error) {
	if o.inputIDs != "" {
		ids, err := parseIDs(o.inputIDs)
		if err != nil {
			return nil, fmt.Errorf("--input-ids: %w", err)
		}
		return ids, nil
	}
	tok, err := tokenizer.Load(o.modelPath)
	if err != nil {
		return nil, fmt.Errorf("--input needs the model's tokenizer (tokenizer.json, or vocab.json and merges.txt; or give --input-ids): %w", err)
	}
	text := "<|im_start|>assistant\n" + o.input + "<|im_end|>\n<|im_start|>assistant\n"
	return tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: true}), nil
}

// writeCodesFile writes the codes file to path, or to stdout without one.
func writeCodesFile(stdout io.Writer, path string, codes [][]int) error {
	data := qwen3tts.MarshalCodes(codes)
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--codes-out: %w", err)
	}
	return nil
}
