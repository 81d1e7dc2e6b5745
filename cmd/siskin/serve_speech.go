package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/server"
	"github.com/siskin-ml/siskin/tokenizer"
)

// served is what siskin serve runs: an LLM server, a speech server, or
// both side by side.
type served interface {
	Handler() http.Handler
	Drain(ctx context.Context) error
	InFlight() int64
}

// speechModel is the --speech-model flag: a Qwen3-TTS folder served beside
// the -m LLM. It is a package variable so serve.go's flag struct stays as
// it is.
var speechModel string

// speechWeights are the speech model's load flags (package variables for
// the same reason as speechModel).
var speechWeights struct {
	predictor, talker string
	parity            bool
}

func addSpeechFlags(fl *pflag.FlagSet) {
	fl.StringVar(&speechModel, "speech-model", "", "a Qwen3-TTS CustomVoice folder to serve beside the -m LLM (/v1/audio/speech); -m alone may also be one")
	fl.StringVar(&speechWeights.predictor, "speech-predictor", "", "the speech model's code predictor weights, converted at load: int8 (q8_0), w8a8, w4a8 or q4_k (default: the file's)")
	fl.StringVar(&speechWeights.talker, "speech-talker", "", "the speech model's talker weights, converted at load: int8 (q8_0), w8a8, w4a8 or q4_k (default: the file's)")
	fl.BoolVar(&speechWeights.parity, "predictor-parity-check", false, "with --speech-predictor: keep a float32 code predictor too and compare it with the converted one on every 8th frame (siskin:speech_predictor_parity_* metrics)")
}

// speechLoadOptions turns the speech weight flags into load options.
func speechLoadOptions() (qwen3tts.Options, error) {
	o, err := weightOptions("--speech-predictor", speechWeights.predictor, "--speech-talker", speechWeights.talker)
	if err == nil && speechWeights.parity && o.Predictor == 0 {
		err = fmt.Errorf("--predictor-parity-check compares a converted code predictor with float32: give --speech-predictor int8, w8a8, w4a8 or q4_k")
	}
	o.ParityCheck = speechWeights.parity
	return o, err
}

// isSpeechFolder reports whether path is a folder of a speech
// architecture (model/load recognizes it from config.json).
func isSpeechFolder(path string) bool {
	a := load.FolderArch(path)
	return a != nil && a.Kind == model.Speech
}

// buildServed builds what -m and --speech-model ask for.
func buildServed(f serveFlags, log *slog.Logger) (served, func(), string, error) {
	if isSpeechFolder(f.model) {
		if speechModel != "" {
			return nil, nil, "", fmt.Errorf("-m %s is a speech model: give the LLM with -m and the speech model with --speech-model", f.model)
		}
		return buildSpeech(f, f.model, f.name, log)
	}
	llm, cleanup, summary, heap, err := buildServer(f, log)
	if err != nil {
		return nil, nil, "", err
	}
	if speechModel == "" {
		limitHeap(heap, log)
		return llm, cleanup, summary, nil
	}
	sp, spCleanup, spSummary, err := buildSpeech(f, speechModel, "", log)
	if err != nil {
		cleanup()
		return nil, nil, "", fmt.Errorf("--speech-model: %w", err)
	}
	both := &server.Both{LLM: llm, Speech: sp.(*server.Speech)}
	return both, func() { spCleanup(); cleanup() }, summary + "\n" + spSummary, nil
}

// buildSpeech loads a Qwen3-TTS folder (talker, code predictor, its
// speech_tokenizer codec and text tokenizer) and serves it on a speech
// pipeline.
func buildSpeech(f serveFlags, dir, name string, log *slog.Logger) (served, func(), string, error) {
	if f.threads > 0 {
		kernels.SetThreads(f.threads)
	}
	o, err := speechLoadOptions()
	if err != nil {
		return nil, nil, "", err
	}
	m, err := qwen3tts.LoadWith(dir, o)
	if err != nil {
		return nil, nil, "", err
	}
	dec, err := codec.Load(filepath.Join(dir, "speech_tokenizer"))
	if err != nil {
		m.Close()
		return nil, nil, "", fmt.Errorf("%s: speech tokenizer: %w", dir, err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		m.Close()
		return nil, nil, "", fmt.Errorf("%s: text tokenizer: %w", dir, err)
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	kvBytes := f.kvBytes
	if kvBytes <= 0 {
		kvBytes = 1 << 30
	}
	eng := engine.NewSpeechPipeline(engine.Config{MaxNumSeqs: f.maxNumSeqs, KVCacheBytes: kvBytes}, m, dec)
	sp := server.NewSpeech(server.SpeechConfig{ModelName: name, APIKey: f.apiKey, MaxRequestBytes: f.maxRequestBytes, Logger: log}, eng, m, tok)
	if err := sp.WarmUp(context.Background()); err != nil {
		eng.Close()
		m.Close()
		return nil, nil, "", fmt.Errorf("%s: %w", dir, err)
	}
	summary := fmt.Sprintf("siskin: speech model %s (Qwen3-TTS %s, %d MiB of weights; voices %s), budget %d MiB, %d threads",
		name, m.Cfg.ModelType, m.WeightBytes()>>20, strings.Join(m.Cfg.SupportedSpeakers(), ", "), kvBytes>>20, kernels.Threads())
	return sp, func() { eng.Close(); m.Close() }, summary, nil
}
