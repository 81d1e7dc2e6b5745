package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
)

// synthQwen3TTS is `siskin synth --arch qwen3_tts`: a random-weight
// Qwen3-TTS folder in the official layout.
func synthQwen3TTS(cmd *cobra.Command, shape, out string, seed uint64, progress string) error {
	if out == "" {
		return errors.New("-o DIR is required (the Qwen3-TTS folder to write)")
	}
	if _, err := synth.LookupShape(shape); err != nil {
		return err
	}
	update, finish, err := newProgress(cmd.ErrOrStderr(), progress, "synth qwen3_tts "+shape)
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := synth.Write(out, synth.Options{Shape: shape, Seed: seed, Progress: update})
	finish(err == nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: qwen3_tts %s, talker %.3fB parameters (%d tensors, BF16, %s), codec decoder %.1fM parameters (%d tensors, F32, %s) in %.1fs\n",
		out, shape, float64(rep.TalkerParams)/1e9, rep.TalkerTensors, human(rep.TalkerBytes),
		float64(rep.CodecParams)/1e6, rep.CodecTensors, human(rep.CodecBytes), time.Since(start).Seconds())
	return nil
}
