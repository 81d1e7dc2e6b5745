package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSpeechBesideLLM: one process serving an LLM and a speech model
// lists both, routes speech and text by model, and answers chat naming
// the speech model with a 404 naming its kind.
func TestSpeechBesideLLM(t *testing.T) {
	f := newSpeechFixture(t)
	llm, _, _ := newServer(t, setup{}, "llm", "stories260K-gguf", "stories260K.gguf")
	ts := httptest.NewServer((&Both{LLM: llm, Speech: f.sp}).Handler())
	defer ts.Close()
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := call("GET", "/v1/models", ""); code != 200 || !strings.Contains(body, `"id":"test-model"`) || !strings.Contains(body, `"task":"text-to-speech"`) {
		t.Errorf("models: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/completions", `{"model":"test-model","prompt":"Once","max_tokens":3}`); code != 200 || !strings.Contains(body, `"text_completion"`) {
		t.Errorf("completions on the LLM: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/chat/completions", `{"model":"tts","messages":[{"role":"user","content":"hi"}]}`); code != 404 || !strings.Contains(body, "text-to-speech") {
		t.Errorf("chat on the speech model: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/audio/speech", `{"model":"tts","input":"Hi.","max_new_tokens":3,"response_format":"pcm"}`); code != 200 || len(body) != 2*2*f.sp.samplesPerFrame() {
		t.Errorf("speech: %d, %d bytes", code, len(body))
	}
	if code, _ := call("POST", "/v1/audio/speech", `{"model":"test-model","input":"Hi."}`); code != 404 {
		t.Errorf("speech naming the LLM: %d", code)
	}
	// One /metrics has both models' series: the speech ones after its
	// request (2 frames), the LLM's after its completion.
	page := getMetrics(t, ts.URL)
	checkSpeechMetrics(t, page, "tts", 1, 2)
	if got := metricValue(t, page, `vllm:e2e_request_latency_seconds_count{model_name="test-model"}`); got != 1 {
		t.Errorf("the LLM's e2e count %v, want 1\n%s", got, page)
	}
	if got := metricValue(t, page, `vllm:num_requests_running{model_name="test-model"}`); got != 0 {
		t.Errorf("the LLM's running gauge %v", got)
	}
}
