// Package server is siskin's OpenAI-compatible HTTP API: completions,
// chat completions (tools, reasoning), Responses, Anthropic Messages,
// embeddings, models, tokenize/detokenize, health and Prometheus metrics
// with vLLM's names, on top of the engine. Handlers return an *apiError
// (apiHandler, anthropicHandler write it); the chat-shaped routes share
// render, startTurn and the gen stream/collect steps.
package server

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/server/web"
	"github.com/siskin-ml/siskin/tokenizer"
)

// Config is what the server needs besides the engine.
type Config struct {
	ModelName       string // served model name
	Version         string // the binary's, for GET /version
	APIKey          string // required as "Authorization: Bearer KEY" when set
	MaxRequestBytes int64
	CORSOrigins     []string
	MaxModelLen     int
	// ToolParser and ReasoningParser name the chat output parsers
	// (chat/toolcall); empty turns them off.
	ToolParser, ReasoningParser string
	// Defaults are the sampling defaults (vLLM's, overridden by the
	// model's generation_config).
	Defaults sample.Params
	// Pooling is how /v1/embeddings pools the final hidden states: "mean",
	// or "last" (the default, right for decoder LMs); see PoolingFromDir.
	Pooling string
	Logger  *slog.Logger
	// Debug are extra handlers mounted by path (e.g. /debug/memory),
	// behind the API key like every endpoint but /health.
	Debug map[string]http.Handler
}

// Server serves one model.
type Server struct {
	cfg       Config
	eng       *engine.Engine
	tok       *tokenizer.Tokenizer
	tmpl      *chat.Template // nil when the model has no chat template
	metrics   *metrics
	ready     atomic.Bool
	drainGate // draining and requests in flight (probes.go)
	created   int64
}

// New returns a server for a loaded model; /health reports ready from the
// start, since the listener opens only after loading.
func New(cfg Config, eng *engine.Engine, tok *tokenizer.Tokenizer, tmpl *chat.Template) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 8 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxModelLen <= 0 {
		cfg.MaxModelLen = eng.Model().Config().ContextLength
	}
	s := &Server{cfg: cfg, eng: eng, tok: tok, tmpl: tmpl, created: time.Now().Unix()}
	s.metrics = newMetrics(cfg.ModelName, eng)
	s.ready.Store(true)
	return s
}

// Handler returns the HTTP handler with every route.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", web.Handler()) // the chat page; it asks for the API key itself
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /readyz", s.health) // readiness; /livez is liveness (probes.go)
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /ping", s.health) // vLLM's (and SageMaker's) health check
	mux.HandleFunc("POST /ping", s.health)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]string{"version": s.cfg.Version})
	})
	mux.Handle("GET /metrics", s.auth(s.metrics.handler()))
	mux.Handle("GET /v1/models", s.auth(http.HandlerFunc(s.models)))
	mux.Handle("GET /v1/models/{model...}", s.auth(http.HandlerFunc(s.model)))
	mux.Handle("POST /v1/completions", s.auth(apiHandler(s.completions)))
	mux.Handle("POST /v1/chat/completions", s.auth(apiHandler(s.chatCompletions)))
	mux.Handle("POST /v1/responses", s.auth(apiHandler(s.responses)))
	mux.Handle("POST /v1/messages", s.anthropicAuth(anthropicHandler(s.messages)))
	mux.Handle("POST /v1/messages/count_tokens", s.anthropicAuth(anthropicHandler(s.countTokens)))
	mux.Handle("POST /v1/embeddings", s.auth(apiHandler(s.embeddings)))
	for _, path := range []string{"/score", "/v1/score"} {
		mux.Handle("POST "+path, s.auth(apiHandler(s.score)))
	}
	for _, path := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
		mux.Handle("POST "+path, s.auth(apiHandler(s.rerank)))
	}
	mux.Handle("POST /tokenize", s.auth(http.HandlerFunc(s.tokenize)))
	mux.Handle("POST /detokenize", s.auth(http.HandlerFunc(s.detokenize)))
	for path, h := range s.cfg.Debug {
		mux.Handle("GET "+path, s.auth(h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: 404, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), Type: "not_found_error"})
	})
	return s.cors(s.track(mux))
}

func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		for _, o := range s.cfg.CORSOrigins {
			if o == "*" || o == origin {
				w.Header().Set("Access-Control-Allow-Origin", origin)
				w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				w.Header().Add("Vary", "Origin")
				break
			}
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WebSocketKeyProtocol is the WebSocket subprotocol prefix that carries
// the API key from a browser, which cannot set Authorization on a
// WebSocket: "siskin.api-key." + the key in unpadded base64url, offered
// beside "siskin.speech" (the one the server answers with).
const WebSocketKeyProtocol = "siskin.api-key."

// auth checks the API key in constant time.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	wantWS := []byte(WebSocketKeyProtocol + base64.RawURLEncoding.EncodeToString([]byte(s.cfg.APIKey)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
		for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
			for p := range strings.SplitSeq(v, ",") {
				ok = ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(p)), wantWS) == 1
			}
		}
		if !ok {
			writeError(w, &apiError{Status: 401, Message: "invalid or missing API key: send Authorization: Bearer <key>", Type: "authentication_error"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeError(w, &apiError{Status: 503, Message: "model is loading", Type: "unavailable"})
		return
	}
	if s.draining.Load() {
		writeError(w, &apiError{Status: 503, Message: "server is shutting down", Type: "unavailable"})
		return
	}
	w.WriteHeader(http.StatusOK)
}

// modelCard is one entry of /v1/models, with vLLM's extra fields.
func (s *Server) modelCard() map[string]any {
	return map[string]any{
		"id": s.cfg.ModelName, "object": "model", "created": s.created, "owned_by": "siskin",
		"root": s.cfg.ModelName, "parent": nil, "max_model_len": s.cfg.MaxModelLen,
	}
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{s.modelCard()}})
}

// model is GET /v1/models/{model}, which OpenAI clients use to check a
// model exists.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if name := r.PathValue("model"); name != s.cfg.ModelName {
		writeError(w, &apiError{Status: 404, Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", name, s.cfg.ModelName), Type: "NotFoundError", Param: "model", Code: "model_not_found"})
		return
	}
	writeJSON(w, 200, s.modelCard())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		// Encoded before the status goes out, so a value JSON cannot
		// hold answers 500 in the API's shape rather than 200 and no body.
		slog.Error("response not encodable", "err", err)
		status = 500
		body, _ = encodeJSON(map[string]any{"error": internalError(err)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// encodeJSON is v as one line of JSON, HTML characters left as they are.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.Status == 429 || e.Status == 503 {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

// decode reads a JSON body into v, turning every failure into a 400 that
// names the field where it can.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &apiError{Status: 413, Message: fmt.Sprintf("request body exceeds %d bytes", s.cfg.MaxRequestBytes), Type: "invalid_request_error"}
		}
		return badRequest("", "reading the request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := strings.TrimPrefix(te.Field, "samplingFields.") // the embedded struct's name
			return badRequest(field, "%s: expected %s, got JSON %s", field, te.Type, te.Value)
		}
		return badRequest("", "invalid JSON body: %v", err)
	}
	if dec.More() {
		return badRequest("", "invalid JSON body: data after the top-level object")
	}
	return nil
}

func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// params maps the shared request fields onto sampling parameters and
// checks them, naming the field on error.
func (s *Server) params(f *samplingFields) (sample.Params, *apiError) {
	p := s.cfg.Defaults
	if f.Temperature != nil {
		p.Temperature = *f.Temperature
	}
	if f.TopP != nil {
		p.TopP = *f.TopP
	}
	if f.TopK != nil {
		p.TopK = *f.TopK
	}
	if f.MinP != nil {
		p.MinP = *f.MinP
	}
	if f.PresencePenalty != nil {
		p.PresencePenalty = *f.PresencePenalty
	}
	if f.FrequencyPenalty != nil {
		p.FrequencyPenalty = *f.FrequencyPenalty
	}
	if f.RepetitionPenalty != nil {
		p.RepetitionPenalty = *f.RepetitionPenalty
	}
	if f.Seed != nil && *f.Seed != -1 {
		p.Seed, p.Seeded = uint64(*f.Seed), true
	}
	if len(f.LogitBias) > 0 {
		p.LogitBias = map[int]float32{}
		for k, v := range f.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil {
				return p, badRequest("logit_bias", "logit_bias key %q is not a token id", k)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return p, badRequest("logit_bias", "logit_bias value for %d is not a finite number", id)
			}
			p.LogitBias[id] = float32(v)
		}
	}
	p.AllowedTokenIDs = f.AllowedTokenIDs
	if f.MinTokens < 0 {
		return p, badRequest("min_tokens", "min_tokens must be >= 0, got %d", f.MinTokens)
	}
	p.MinTokens = f.MinTokens
	p.StopTokenIDs = f.StopTokenIDs
	if !f.IgnoreEOS {
		p.EOSTokenIDs = s.tok.EOGs()
	}
	for _, w := range f.BadWords {
		ids := s.tok.Encode(w, tokenizer.EncodeOptions{})
		if len(ids) > 0 {
			p.BadWords = append(p.BadWords, ids)
		}
	}
	if err := p.Validate(s.eng.Model().Config().Vocab); err != nil {
		var pe *sample.ParamError
		if errors.As(err, &pe) {
			return p, badRequest(pe.Param, "%s", pe.Msg)
		}
		return p, badRequest("", "%v", err)
	}
	return p, nil
}

// parseStop parses "stop": a string or a list of strings.
func parseStop(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "stop must be a string or a list of strings")
	}
	var out []string
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// checkModel refuses a request for another model with a 404; an empty
// name means the served one.
func (s *Server) checkModel(name string) *apiError {
	if name != "" && name != s.cfg.ModelName {
		return &apiError{Status: 404, Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", name, s.cfg.ModelName), Type: "NotFoundError", Param: "model", Code: "model_not_found"}
	}
	return nil
}

// common validates the fields that do not depend on the endpoint.
func (s *Server) common(f *samplingFields) *apiError {
	if err := s.checkModel(f.Model); err != nil {
		return err
	}
	if err := s.parseStructured(f); err != nil {
		return err
	}
	if f.N != nil && (*f.N < 1 || *f.N > 16) {
		return badRequest("n", "n must be between 1 and 16, got %d", *f.N)
	}
	if err := s.checkTruncate(f.TruncatePromptTokens); err != nil {
		return err
	}
	if n := f.PromptLogprobs; n != nil {
		if *n < 0 || *n > 20 {
			return badRequest("prompt_logprobs", "prompt_logprobs must be between 0 and 20, got %d", *n)
		}
		switch {
		case f.Stream && *n > 0:
			return badRequest("prompt_logprobs", "prompt_logprobs are not available when stream is true")
		case !f.Stream: // 0 with stream is let through, as vLLM does, and unanswered
			f.scorePrompt, f.promptTop = true, max(f.promptTop, *n)
		}
	}
	if f.MaxTokens != nil && *f.MaxTokens < 1 && !(f.echo && *f.MaxTokens == 0) {
		return badRequest("max_tokens", "max_tokens must be at least 1 (0 only with echo), got %d", *f.MaxTokens)
	}
	if f.MaxCompletionTokens != nil && *f.MaxCompletionTokens < 1 {
		return badRequest("max_completion_tokens", "max_completion_tokens must be at least 1, got %d", *f.MaxCompletionTokens)
	}
	for _, id := range f.StopTokenIDs {
		if id < 0 || id >= s.eng.Model().Config().Vocab {
			return badRequest("stop_token_ids", "stop_token_ids: %d is not a token id", id)
		}
	}
	if f.StreamOptions != nil && !f.Stream {
		return badRequest("stream_options", "stream_options is only allowed when stream is true")
	}
	if s.draining.Load() {
		return &apiError{Status: 503, Message: "server is shutting down", Type: "unavailable"}
	}
	return nil
}

// checkTruncate checks truncate_prompt_tokens: -1 or 1 to the context
// length, as vLLM takes it.
func (s *Server) checkTruncate(k *int) *apiError {
	if k != nil && *k != -1 && (*k < 1 || *k > s.cfg.MaxModelLen) {
		return badRequest("truncate_prompt_tokens", "truncate_prompt_tokens must be -1 or between 1 and the context length %d, got %d", s.cfg.MaxModelLen, *k)
	}
	return nil
}

// truncate keeps a prompt's last k tokens (truncate_prompt_tokens; -1
// is the context length), dropping those before.
func (s *Server) truncate(k *int, ids []int) []int {
	if k == nil {
		return ids
	}
	n := *k
	if n == -1 {
		n = s.cfg.MaxModelLen
	}
	return ids[max(0, len(ids)-n):]
}

// maxTokens resolves max_tokens against the context length.
func (s *Server) maxTokens(f *samplingFields, promptLen int, field string) (int, *apiError) {
	limit := s.cfg.MaxModelLen
	if promptLen >= limit {
		return 0, badRequest(field, "this model's maximum context length is %d tokens, but the prompt has %d tokens", limit, promptLen)
	}
	n := limit - promptLen
	req := f.MaxTokens
	name := "max_tokens"
	if f.maxTokensField != "" {
		name = f.maxTokensField
	}
	if f.MaxCompletionTokens != nil {
		req, name = f.MaxCompletionTokens, "max_completion_tokens"
	}
	if req != nil {
		if promptLen+*req > limit {
			return 0, badRequest(name, "this model's maximum context length is %d tokens; the prompt has %d tokens and %s asks for %d more", limit, promptLen, name, *req)
		}
		n = *req
	}
	return n, nil
}

// submit starts n choices for one prompt.
func (s *Server) submit(r *http.Request, prompt []int, maxTokens int, p sample.Params, f *samplingFields, stops []string, firstIndex, n int) ([]*choice, *apiError) {
	stopIDs := map[int]bool{}
	for _, id := range f.StopTokenIDs {
		stopIDs[id] = true
	}
	skip := true
	if f.SkipSpecialTokens != nil {
		skip = *f.SkipSpecialTokens
	}
	var out []*choice
	for j := 0; j < n; j++ {
		pj := p
		if n > 1 && p.Seeded {
			pj.Seed = p.Seed + uint64(j) // distinct but reproducible choices
		}
		pj, err := s.withConstraint(pj, f)
		if err != nil {
			cancelAll(out)
			return nil, internalError(err)
		}
		seq, err := sample.NewSequence(pj, prompt)
		if err != nil {
			cancelAll(out)
			return nil, badRequest("", "%v", err)
		}
		ctx, cancel := contextWithCancel(r)
		req := engine.Request{
			Prompt: prompt, MaxTokens: maxTokens, Sampler: seq, CacheSalt: f.CacheSalt,
			ScorePrompt: f.scorePrompt, PromptTop: f.promptTop,
			Stop: func(id int) bool { return stopIDs[id] || !f.IgnoreEOS && s.tok.IsEOG(id) },
		}
		events, err := s.eng.Submit(ctx, req)
		if err != nil {
			cancel()
			cancelAll(out)
			switch {
			case errors.Is(err, engine.ErrQueueFull):
				return nil, &apiError{Status: 429, Message: "too many requests are waiting; retry later", Type: "rate_limit_error"}
			case errors.Is(err, engine.ErrTooLarge):
				return nil, badRequest("max_tokens", "%v", err)
			}
			return nil, &apiError{Status: 503, Message: err.Error(), Type: "unavailable"}
		}
		out = append(out, &choice{
			index: firstIndex + j, events: relay(ctx, events), cancel: cancel, stops: stops, stopIDs: stopIDs, keepStop: f.IncludeStopStrInOutput,
			dec: s.tok.NewStreamDecoderWith(tokenizer.DecodeOptions{SkipSpecial: skip, Continuation: true}),
		})
	}
	return out, nil
}

func cancelAll(cs []*choice) {
	for _, c := range cs {
		c.cancel()
	}
}

// tokenText is a token's own text for logprobs.
// promptLogprobs is vLLM's prompt_logprobs of a prompt and its scores,
// nil when not asked for.
func (s *Server) promptLogprobs(f *samplingFields, ids []int, scored []sample.Token) promptLogprobs {
	if f.PromptLogprobs == nil || len(scored) != len(ids)-1 {
		return nil
	}
	out := promptLogprobs{nil}
	for i, t := range scored {
		e := promptScores{{id: ids[i+1], Logprob: wireLogprob(t.Logprob), Rank: t.Rank, DecodedToken: s.tokenText(ids[i+1])}}
		for r, tl := range t.Top[:min(len(t.Top), *f.PromptLogprobs)] {
			e = append(e, promptScore{id: tl.ID, Logprob: wireLogprob(tl.Logprob), Rank: r + 1, DecodedToken: s.tokenText(tl.ID)})
		}
		out = append(out, e)
	}
	return out
}

func (s *Server) tokenText(id int) string {
	return s.tok.DecodeWith([]int{id}, tokenizer.DecodeOptions{Continuation: true})
}

func ptr[T any](v T) *T { return &v }

func bytesOf(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

func finishPtr(why string) *string {
	if why == "" {
		return nil
	}
	return &why
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(200)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) send(v any) error { return e.write("", v) }

// event sends a named event, as the Responses and Messages APIs stream.
func (e *sse) event(name string, v any) error { return e.write("event: "+name+"\n", v) }

// write sends v as one data line after head, and flushes.
func (e *sse) write(head string, v any) error {
	body, err := encodeJSON(v)
	if err != nil {
		// The stream ends with an error event rather than an empty line.
		slog.Error("event not encodable", "err", err)
		body, _ = encodeJSON(map[string]any{"error": internalError(err)})
		head = ""
	}
	_, werr := io.WriteString(e.w, head+"data: "+string(body)+"\n")
	if err == nil {
		err = werr
	}
	if e.f != nil {
		e.f.Flush()
	}
	return err
}

func (e *sse) done() {
	io.WriteString(e.w, "data: [DONE]\n\n")
	if e.f != nil {
		e.f.Flush()
	}
}

func (e *sse) fail(err *apiError) {
	e.send(map[string]any{"error": err})
	e.done()
}
