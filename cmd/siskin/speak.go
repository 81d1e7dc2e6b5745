package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func speakCmd() *cobra.Command {
	var model string
	cmd := &cobra.Command{
		Use:   "speak -m DIR --codes-in FILE.json -o out.wav [--format wav|pcm|flac] [--codec DIR]",
		Short: "Write speech audio from Qwen3-TTS codec codes",
		Long: `Decode Qwen3-TTS codec codes (16 per 80 ms frame) to 24 kHz mono audio with the model's
speech tokenizer (DIR/speech_tokenizer/, or DIR itself, or --codec) and write it as WAV, raw PCM
(s16le) or FLAC. --codes-in FILE.json gives the codes as {"codes": [[16 ints], ...]}.`,
		Args: cobra.NoArgs,
	}
	opts := addAudioFlags(cmd)
	cmd.Flags().StringVarP(&model, "model", "m", "", "Qwen3-TTS model folder, or a speech tokenizer folder")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if opts.codesIn == "" {
			return errors.New("--codes-in FILE.json is required (text to speech needs the Qwen3-TTS talker, not in this build)")
		}
		return speakCodesIn(cmd, model, opts)
	}
	return cmd
}
