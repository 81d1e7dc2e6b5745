package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/server/web"
	"github.com/siskin-ml/siskin/tokenizer"
)

// SpeechConfig is what a speech server needs besides its engine.
type SpeechConfig struct {
	ModelName       string // served model name
	APIKey          string // required as "Authorization: Bearer KEY" when set
	MaxRequestBytes int64
	// MaxInputChars bounds input (default 4096 characters).
	MaxInputChars int
	// DefaultMaxFrames is the frame limit of a request without
	// max_new_tokens (default 2047: vLLM-Omni's 2048 talker steps, about
	// 164 s of audio), which stops a runaway utterance.
	DefaultMaxFrames int
	Logger           *slog.Logger
}

// Speech serves a Qwen3-TTS model: /v1/audio/speech, /v1/audio/voices
// and the model's /v1/models card, on an engine.NewSpeechPipeline.
type Speech struct {
	cfg       SpeechConfig
	eng       *engine.Engine
	m         *qwen3tts.Model
	tok       *tokenizer.Tokenizer
	created   int64
	drainGate // draining refuses new requests during shutdown (probes.go)
	metrics   *speechMetrics
}

// NewSpeech returns a speech server; tok is the model's text tokenizer.
func NewSpeech(cfg SpeechConfig, eng *engine.Engine, m *qwen3tts.Model, tok *tokenizer.Tokenizer) *Speech {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 1 << 20
	}
	if cfg.MaxInputChars <= 0 {
		cfg.MaxInputChars = 4096
	}
	if cfg.DefaultMaxFrames <= 0 {
		cfg.DefaultMaxFrames = 2047
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Speech{cfg: cfg, eng: eng, m: m, tok: tok, created: time.Now().Unix(), metrics: newSpeechMetrics(cfg.ModelName, eng, m)}
}

// ModelName is the served name.
func (s *Speech) ModelName() string { return s.cfg.ModelName }

// Handler serves the speech model alone: its routes, /health, /v1/models
// and a 404 naming the model kind on chat and completions.
func (s *Speech) Handler() http.Handler {
	mux := http.NewServeMux()
	s.register(mux)
	mux.Handle("GET /{$}", web.Handler()) // the page: with no chat model, it speaks what is typed
	mux.Handle("GET /metrics", s.auth(s.metrics.handler()))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if s.draining.Load() {
			writeError(w, &apiError{Status: 503, Message: "server is shutting down", Type: "unavailable"})
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /livez", live)
	mux.Handle("GET /v1/models", s.auth(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{s.Card()}})
	})))
	for _, p := range []string{"POST /v1/chat/completions", "POST /v1/completions", "POST /v1/responses", "POST /v1/embeddings"} {
		mux.Handle(p, s.auth(http.HandlerFunc(s.notText)))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: 404, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), Type: "not_found_error"})
	})
	return s.track(mux)
}

// register adds the speech routes to mux.
func (s *Speech) register(mux *http.ServeMux) {
	mux.Handle("POST /v1/audio/speech", s.auth(apiHandler(s.speech)))
	mux.Handle("GET /v1/audio/speech/stream", s.auth(http.HandlerFunc(s.speechStream)))
	mux.Handle("GET /v1/audio/voices", s.auth(http.HandlerFunc(s.voices)))
	mux.Handle("GET /v1/models/"+s.cfg.ModelName, s.auth(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, s.Card())
	})))
}

// Card is the model's /v1/models entry; task names it a speech model
// (the chat page offers speech for such models).
func (s *Speech) Card() map[string]any {
	return map[string]any{
		"id": s.cfg.ModelName, "object": "model", "created": s.created, "owned_by": "siskin",
		"root": s.cfg.ModelName, "parent": nil, "task": "text-to-speech",
		"max_model_len": s.m.Cfg.Talker.ContextLength,
	}
}

// notText answers chat and completions on a speech model.
func (s *Speech) notText(w http.ResponseWriter, r *http.Request) {
	writeError(w, &apiError{Status: 404, Message: fmt.Sprintf("%s: the model %q is a text-to-speech model (Qwen3-TTS); use POST /v1/audio/speech", r.URL.Path, s.cfg.ModelName), Type: "NotFoundError", Param: "model", Code: "model_not_found"})
}

func (s *Speech) voices(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"voices": s.m.Cfg.SupportedSpeakers(), "languages": s.m.Cfg.SupportedLanguages()})
}

func (s *Speech) auth(next http.Handler) http.Handler {
	return (&Server{cfg: Config{APIKey: s.cfg.APIKey}}).auth(next)
}

// speech is POST /v1/audio/speech.
func (s *Speech) speech(w http.ResponseWriter, r *http.Request) *apiError {
	if s.draining.Load() {
		return &apiError{Status: 503, Message: "server is shutting down", Type: "unavailable"}
	}
	start := time.Now()
	var req speechRequest
	if e := decodeSpeech(w, r, s.cfg.MaxRequestBytes, &req); e != nil {
		return e
	}
	job, e := s.check(&req)
	if e != nil {
		return e
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // a client that hangs up frees the request within a step
	ch, err := s.submit(ctx, job, start)
	if err != nil {
		return submitError(err)
	}
	switch {
	case job.stream == "sse":
		s.streamSSE(w, ch, job)
	case job.stream == "audio":
		streamAudio(w, ch, job)
	case job.sp.Codes:
		return writeCodes(w, ch, job)
	default:
		return writeBuffered(w, ch, job)
	}
	return nil
}

// submit queues a checked job, its events followed for the metrics from
// start.
func (s *Speech) submit(ctx context.Context, job *speechJob, start time.Time) (<-chan engine.Event, error) {
	job.track = &speechTrack{m: s.metrics, start: start}
	u := job.sp.Utterance
	return s.eng.Submit(ctx, engine.Request{Prompt: u.IDs, MaxTokens: u.MaxFrames, Params: job.sp, CacheSalt: job.salt})
}

// submitError maps the engine's refusals to API errors.
func submitError(err error) *apiError {
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		return &apiError{Status: 429, Message: err.Error(), Type: "rate_limit_error"}
	case errors.Is(err, engine.ErrTooLarge):
		return badRequest("max_new_tokens", "the request can never fit: %v; lower max_new_tokens or shorten input", err)
	}
	return badRequest("input", "%v", err)
}
