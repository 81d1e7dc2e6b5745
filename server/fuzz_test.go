package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// capped bounds the work of one fuzzed request, so the fuzzer spends
// its time on parsing and validation rather than generation: in a JSON
// object body, max_tokens defaults to 4 instead of the rest of the
// context, and a numeric max_tokens, max_completion_tokens or n above 8
// becomes 8. Anything else (values of the wrong type, negative numbers,
// bodies that are not objects) reaches the server untouched.
func capped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		var obj map[string]json.RawMessage
		if json.Unmarshal(body.Bytes(), &obj) == nil && obj != nil {
			if obj["max_tokens"] == nil && obj["max_completion_tokens"] == nil {
				obj["max_tokens"] = json.RawMessage("4")
			}
			for _, k := range []string{"max_tokens", "max_completion_tokens", "n"} {
				var v float64
				if json.Unmarshal(obj[k], &v) == nil && v > 8 {
					obj[k] = json.RawMessage("8")
				}
			}
			raw, _ := json.Marshal(obj)
			body.Reset()
			body.Write(raw)
		}
		r.Body = readCloser{bytes.NewReader(body.Bytes())}
		h.ServeHTTP(w, r)
	})
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// fuzzRequest posts body to path in-process and checks the answer: never
// a panic, never a 5xx, and always well-formed JSON (an OpenAI error,
// a response, or a stream of JSON events ending in [DONE]).
func fuzzRequest(t *testing.T, h http.Handler, path string, body []byte) {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	out := rec.Body.Bytes()
	switch {
	case rec.Code >= 500:
		t.Fatalf("status %d for %q: %s", rec.Code, body, out)
	case rec.Code != 200:
		errorBody(t, out)
	case strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		done := false
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				done = true
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil || done {
				t.Fatalf("bad event %q for %q", data, body)
			}
			if ev["error"] != nil {
				t.Fatalf("error event %s for %q", data, body)
			}
		}
		if !done {
			t.Fatalf("stream without [DONE] for %q", body)
		}
	default:
		var resp struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || len(resp.Choices) == 0 {
			t.Fatalf("bad response %s for %q", out, body)
		}
	}
}

// FuzzCompletionRequest posts arbitrary JSON to /v1/completions. Its seed
// corpus, testdata/fuzz/FuzzCompletionRequest, covers every field:
//
//	go test -run NONE -fuzz FuzzCompletionRequest -fuzztime 30s ./server/
func FuzzCompletionRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 48}}, "llm", "stories260K-gguf", "stories260K.gguf")
	h := capped(s.Handler())
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRequest(t, h, "/v1/completions", body) })
}

// FuzzChatRequest posts arbitrary JSON to /v1/chat/completions on the
// Spark twin (real chat template, spark25 and reasoning parsers); seeds
// in testdata/fuzz/FuzzChatRequest.
func FuzzChatRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 320}}, sparkHF...)
	h := capped(s.Handler())
	f.Fuzz(func(t *testing.T, body []byte) { fuzzRequest(t, h, "/v1/chat/completions", body) })
}
