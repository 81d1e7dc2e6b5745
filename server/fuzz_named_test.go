package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

var qwen3HF = []string{"llm", "tiny", "hf", "qwen3-tiny", "bf16"}

func reflectValue(v any) reflect.Value { return reflect.ValueOf(v) }

// cappedOutput is capped for the Responses and Messages routes: their
// token limits are max_output_tokens and max_tokens (required there), so
// both default to 4 and are cut to 8.
func cappedOutput(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		var obj map[string]json.RawMessage
		if json.Unmarshal(body.Bytes(), &obj) == nil && obj != nil {
			for _, k := range []string{"max_output_tokens", "max_tokens"} {
				var v float64
				if obj[k] == nil {
					obj[k] = json.RawMessage("4")
				} else if json.Unmarshal(obj[k], &v) == nil && v > 8 {
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

// fuzzNamed posts body to a route that streams named events (Responses,
// Messages) and checks the answer: never a panic, never a 5xx, an error
// in the route's own shape ({"error": {"message", ...}}), and a stream
// of named events whose data are JSON objects with their name as type
// and no error event.
func fuzzNamed(t *testing.T, h http.Handler, path string, body []byte) {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	out := rec.Body.Bytes()
	switch {
	case rec.Code >= 500:
		t.Fatalf("status %d for %q: %s", rec.Code, body, out)
	case rec.Code != 200:
		var e struct {
			Error *struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if json.Unmarshal(out, &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
			t.Fatalf("status %d without an error body for %q: %s", rec.Code, body, out)
		}
	case strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
		names, data := sseNamed(t, out)
		if len(names) == 0 {
			t.Fatalf("empty stream for %q", body)
		}
		for i, n := range names {
			if n == "error" || data[i]["type"] != n {
				t.Fatalf("event %s %v for %q", n, data[i], body)
			}
		}
	default:
		var resp map[string]any
		if err := json.Unmarshal(out, &resp); err != nil || resp["id"] == nil && resp["object"] != "list" {
			t.Fatalf("bad response %s for %q", out, body)
		}
	}
}
