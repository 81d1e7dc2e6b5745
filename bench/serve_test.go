package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeServer answers /v1/models and /v1/completions like an
// OpenAI-compatible server, with tokens completion tokens (or, if status
// is not 200, that status and a body).
func fakeServer(t *testing.T, tokens, status int, seen *atomic.Int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"object":"list","data":[{"id":"m1"},{"id":"m2"}]}`))
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			IgnoreEOS bool   `json:"ignore_eos"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m1" || !req.IgnoreEOS || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		seen.Add(1)
		if status != http.StatusOK {
			http.Error(w, `{"error":{"message":"overloaded"}}`, status)
			return
		}
		n := min(tokens, req.MaxTokens)
		w.Write([]byte(`{"usage":{"completion_tokens":` + strconv.Itoa(n) + `}}`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// RunServe sends a warm-up burst as wide as the widest test, then Reps bursts of each
// concurrency, with the first listed model, the bearer key and
// ignore_eos; tokens a second count every request's tokens.
func TestRunServe(t *testing.T) {
	var seen atomic.Int64
	ts := fakeServer(t, 1000, http.StatusOK, &seen)
	res, err := RunServe(context.Background(), ServeOptions{URL: ts.URL + "/", APIKey: "k", Concurrency: []int{1, 3}, Tokens: 5, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := seen.Load(); got != 3+2*1+2*3 {
		t.Errorf("%d requests, want %d (a warm-up of 3, then 2 bursts of 1 and 2 of 3)", got, 3+2+6)
	}
	if len(res) != 2 || res[0].Streams != 1 || res[1].Streams != 3 || len(res[1].Bursts) != 2 || res[1].Model != "m1" || res[0].VsSingle != 1 {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		for _, b := range r.Bursts {
			if b <= 0 {
				t.Errorf("streams %d: a burst of %v tokens/s", r.Streams, b)
			}
		}
	}
}

// A failing request, a completion cut short and a URL that is not one
// are errors naming what went wrong.
func TestRunServeErrors(t *testing.T) {
	var seen atomic.Int64
	for _, c := range []struct {
		name string
		url  string
		want string
	}{
		{"status", fakeServer(t, 1000, http.StatusServiceUnavailable, &seen).URL, "503 Service Unavailable: {\"error\":{\"message\":\"overloaded\"}}"},
		{"short", fakeServer(t, 3, http.StatusOK, &seen).URL, "3 completion tokens, asked 5"},
		{"url", "localhost:8080", `--url "localhost:8080": want http://host:port`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := RunServe(context.Background(), ServeOptions{URL: c.url, APIKey: "k", Concurrency: []int{1}, Tokens: 5, Reps: 1})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
