package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// SetDraining makes the speech server refuse new requests (503) while
// in-flight ones finish.
func (s *Speech) SetDraining() { s.draining.Store(true) }

// Both serves an LLM and a speech model from one process (siskin serve -m
// LLM --speech-model TTS_DIR): the speech routes go to sp, everything
// else to llm; /v1/models lists both; chat and completions naming the
// speech model answer 404 naming its kind.
type Both struct {
	LLM    *Server
	Speech *Speech
}

// SetDraining drains both servers.
func (b *Both) SetDraining() {
	b.LLM.SetDraining()
	b.Speech.SetDraining()
}

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
	mux.Handle("/", llm)
	return mux
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
			Model string `json:"model"`
		}
		if json.Unmarshal(body, &peek) == nil && peek.Model == b.Speech.cfg.ModelName {
			b.Speech.auth(http.HandlerFunc(b.Speech.notText)).ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		llm.ServeHTTP(w, r)
	})
}
