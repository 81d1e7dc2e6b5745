package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Both serves an LLM and a speech model from one process (siskin serve -m
// LLM --speech-model TTS_DIR): the speech routes go to sp, everything
// else to llm; /v1/models lists both; chat and completions naming the
// speech model answer 404 naming its kind.
type Both struct {
	LLM    *Server
	Speech *Speech
}

// Drain drains both servers (see drainGate.Drain).
func (b *Both) Drain(ctx context.Context) error {
	b.Speech.SetDraining()
	if err := b.LLM.Drain(ctx); err != nil {
		return err
	}
	return b.Speech.Drain(ctx)
}

// InFlight is the number of HTTP requests either server is serving.
func (b *Both) InFlight() int64 { return b.LLM.InFlight() + b.Speech.InFlight() }

// Handler returns the combined handler.
func (b *Both) Handler() http.Handler {
	mux := http.NewServeMux()
	b.Speech.register(mux)
	llm := b.LLM.Handler()
	mux.Handle("GET /v1/models", b.LLM.auth(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{b.LLM.modelCard(), b.Speech.Card()}})
	})))
	for _, p := range []string{"POST /v1/chat/completions", "POST /v1/completions", "POST /v1/responses", "POST /v1/embeddings"} {
		mux.Handle(p, b.routeByModel(llm))
	}
	// One /metrics with both models' series (each labelled model_name).
	mux.Handle("GET /metrics", b.LLM.auth(promhttp.HandlerFor(prometheus.Gatherers{b.LLM.metrics.reg, b.Speech.metrics.reg}, promhttp.HandlerOpts{})))
	mux.Handle("/", llm)
	return b.Speech.track(mux)
}

// routeByModel answers a text route naming the speech model with 404,
// and hands every other request, body intact, to llm.
func (b *Both) routeByModel(llm http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, b.LLM.cfg.MaxRequestBytes))
		if err != nil {
			writeError(w, &apiError{Status: 413, Message: "request body too large or unreadable: " + err.Error(), Type: "invalid_request_error"})
			return
		}
		var peek struct {
			Model      string          `json:"model"`
			Modalities json.RawMessage `json:"modalities"`
		}
		if json.Unmarshal(body, &peek) == nil && peek.Model == b.Speech.cfg.ModelName {
			b.Speech.auth(http.HandlerFunc(b.Speech.notText)).ServeHTTP(w, r)
			return
		}
		// Only a chat request that names modalities may ask for audio.
		var fields map[string]json.RawMessage
		if r.URL.Path == "/v1/chat/completions" && len(peek.Modalities) > 0 && json.Unmarshal(body, &fields) == nil && fields != nil {
			if a, err := audioOf(fields); err != nil || a != nil {
				b.LLM.auth(apiHandler(func(w http.ResponseWriter, r *http.Request) *apiError {
					if err != nil {
						return err
					}
					return b.chatWithAudio(w, r, fields, a, llm)
				})).ServeHTTP(w, r)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		llm.ServeHTTP(w, r)
	})
}
