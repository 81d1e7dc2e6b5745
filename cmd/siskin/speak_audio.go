package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/audio"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// audioOptions are speak's output flags: where the codec is, which codes
// to decode (--codes-in skips the talker) and the file to write.
type audioOptions struct {
	out, format, codecDir, codesIn, progress string
}

// addAudioFlags adds speak's audio flags to cmd.
func addAudioFlags(cmd *cobra.Command) *audioOptions {
	o := &audioOptions{}
	f := cmd.Flags()
	f.StringVarP(&o.out, "output", "o", "", "audio file to write")
	f.StringVar(&o.format, "format", "", "audio format: "+audio.Formats+" (default: from the -o extension, else wav)")
	f.StringVar(&o.codecDir, "codec", "", "speech tokenizer folder (config.json + model.safetensors; default: MODEL/speech_tokenizer, else MODEL itself)")
	f.StringVar(&o.codesIn, "codes-in", "", `decode these codes instead of generating them: a JSON file {"codes": [[16 ints], ...]}`)
	f.StringVar(&o.progress, "progress", "auto", "progress on stderr for long inputs: auto, on or off")
	return o
}

// outputFormat resolves --format, or the -o extension, to a format.
func (o *audioOptions) outputFormat() (audio.Format, error) {
	if o.out == "" {
		return "", errors.New("-o FILE is required (the audio file to write)")
	}
	name := o.format
	if name == "" {
		name = strings.TrimPrefix(strings.ToLower(filepath.Ext(o.out)), ".")
		if name == "raw" {
			name = "pcm"
		}
		if _, err := audio.ParseFormat(name); err != nil && name != "mp3" && name != "opus" && name != "ogg" {
			name = "wav"
		}
	}
	f, err := audio.ParseFormat(name)
	if err != nil {
		return "", fmt.Errorf("--format: %w", err)
	}
	return f, nil
}

// codecPath finds the speech tokenizer: --codec, else the official
// layout's MODEL/speech_tokenizer/, else MODEL itself.
func (o *audioOptions) codecPath(model string) (string, error) {
	if o.codecDir != "" {
		return o.codecDir, nil
	}
	if model == "" {
		return "", errors.New("-m MODEL or --codec DIR is required (the folder holding the speech tokenizer)")
	}
	if st, err := os.Stat(filepath.Join(model, "speech_tokenizer")); err == nil && st.IsDir() {
		return filepath.Join(model, "speech_tokenizer"), nil
	}
	return model, nil
}

// loadSpeechCodec loads the codec decoder for model (see codecPath).
func (o *audioOptions) loadSpeechCodec(model string) (*codec.Decoder, error) {
	dir, err := o.codecPath(model)
	if err != nil {
		return nil, err
	}
	d, err := codec.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("speech tokenizer: %w", err)
	}
	return d, nil
}

// speakCodesIn is `siskin speak --codes-in FILE.json`: decode the codes
// in FILE and write the audio.
func speakCodesIn(cmd *cobra.Command, model string, o *audioOptions) error {
	format, err := o.outputFormat()
	if err != nil {
		return err
	}
	dec, err := o.loadSpeechCodec(model)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(o.codesIn)
	if err != nil {
		return err
	}
	cfg := dec.Config()
	codes, err := codec.ParseCodes(data, cfg.Quantizers, cfg.CodebookSize)
	if err != nil {
		return fmt.Errorf("%s: %w", o.codesIn, err)
	}
	return writeSpeechAudio(cmd, dec, codes, format, o)
}

// progressFrames is the input length (frames) from which decoding shows
// progress, and the frames per progress step: 2 seconds of audio.
const progressFrames = 25

// writeSpeechAudio decodes frame-major codes with dec and writes the
// audio to o.out in format. Nothing is written unless decoding succeeds.
func writeSpeechAudio(cmd *cobra.Command, dec *codec.Decoder, codes []int32, format audio.Format, o *audioOptions) error {
	q := dec.Config().Quantizers
	frames := len(codes) / q
	mode := o.progress
	if frames <= progressFrames && mode == "auto" {
		mode = "off"
	}
	update, finish, err := newProgress(cmd.ErrOrStderr(), mode, fmt.Sprintf("decode %d frames", frames))
	if err != nil {
		return err
	}
	s := dec.NewStream(0)
	wav := make([]float32, 0, frames*dec.Config().SamplesPerFrame())
	for f := 0; f < frames; f += progressFrames {
		n := min(progressFrames, frames-f)
		if wav, err = s.Push(wav, codes[f*q:(f+n)*q]); err != nil {
			finish(false)
			return err
		}
		if update != nil {
			update(int64(f+n), int64(frames))
		}
	}
	finish(true)
	pcm := audio.ToInt16(make([]int16, 0, len(wav)), wav)
	var buf bytes.Buffer
	if err := audio.Write(&buf, format, pcm, codec.SampleRate); err != nil {
		return err
	}
	if err := writeFileAtomic(o.out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %d frames, %d samples (%.2f s at %d Hz), %s\n",
		o.out, frames, len(pcm), float64(len(pcm))/codec.SampleRate, codec.SampleRate, format)
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a failed write leaves no partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, bytes.NewReader(data))
	if err == nil {
		// CreateTemp makes the file 0600; an audio file is as readable as
		// any other the user writes.
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// frameCodes flattens frames of codes (the talker's [][]int) to the
// frame-major []int32 the codec decodes.
func frameCodes(frames [][]int) []int32 {
	out := make([]int32, 0, len(frames)*16)
	for _, f := range frames {
		for _, c := range f {
			out = append(out, int32(c))
		}
	}
	return out
}
