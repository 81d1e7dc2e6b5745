package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
)

type testServer struct {
	*httptest.Server
	srv *Server
	eng *engine.Engine
	lm  *load.Loaded
}

// setup is what a test server is built from beyond the model file.
type setup struct {
	cfg Config
	eng engine.Config
	// wrap, when set, replaces the model the engine runs (scripted or
	// slowed-down models for deterministic tests).
	wrap func(model.Model, *load.Loaded) model.Model
}

// start serves a model from the shared test data on a loopback port.
func start(t testing.TB, cfg Config, elem ...string) *testServer {
	t.Helper()
	return startWith(t, setup{cfg: cfg}, elem...)
}

// startWith is start with engine limits and an optional model wrapper.
func startWith(t testing.TB, su setup, elem ...string) *testServer {
	t.Helper()
	s, eng, lm := newServer(t, su, elem...)
	ts := &testServer{Server: httptest.NewServer(s.Handler()), srv: s, eng: eng, lm: lm}
	t.Cleanup(ts.Close) // runs before newServer's cleanup: no handler outlives the engine
	return ts
}

// newServer builds the server the way `siskin serve` does, without
// listening: the chat template from the GGUF or HF folder, and the tool
// and reasoning parsers of the architecture.
func newServer(t testing.TB, su setup, elem ...string) (*Server, *engine.Engine, *load.Loaded) {
	t.Helper()
	lm, err := load.Open(testdata.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl *chat.Template
	if lm.Source.GGUF != nil {
		if src, ok := lm.Source.GGUF.String("tokenizer.chat_template"); ok {
			if tmpl, err = chat.Parse(src); err != nil {
				t.Fatal(err)
			}
		}
	} else if tmpl, err = chat.FromHFDir(lm.Source.Path); err != nil && !errors.Is(err, chat.ErrNoTemplate) {
		t.Fatal(err) // a folder without a template serves completions and embeddings, as serve does
	}
	ecfg := su.eng
	if ecfg.MaxNumSeqs == 0 {
		ecfg.MaxNumSeqs = 8
	}
	if ecfg.MaxNumBatchedTokens == 0 {
		ecfg.MaxNumBatchedTokens = 64
	}
	if ecfg.KVCacheBytes == 0 {
		ecfg.KVCacheBytes = 64 << 20
	}
	m := lm.Model
	if su.wrap != nil {
		m = su.wrap(m, lm)
	}
	eng := engine.New(m, ecfg)
	cfg := su.cfg
	if cfg.ModelName == "" {
		cfg.ModelName = "test-model"
	}
	if cfg.Defaults.TopP == 0 {
		cfg.Defaults = sample.Defaults()
	}
	if arch := lm.Model.Config().Arch; cfg.ToolParser == "" && tmpl != nil {
		// As `siskin serve` picks them.
		cfg.ToolParser, cfg.ReasoningParser = load.ToolParserFor(arch), load.ReasoningParserFor(arch)
	}
	s := New(cfg, eng, lm.Tokenizer, tmpl)
	t.Cleanup(func() { eng.Close(); lm.Close() })
	return s, eng, lm
}

func (ts *testServer) post(t testing.TB, path string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(ts.URL+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func stories(t testing.TB) *testServer {
	return start(t, Config{}, "llm", "stories260K-gguf", "stories260K.gguf")
}

func TestCompletionGreedyMatchesLlamaCpp(t *testing.T) {
	ts := stories(t)
	code, body := ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 128, "temperature": 0})
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var resp completionResponse
	json.Unmarshal(body, &resp)
	golden, _ := io.ReadAll(must(t, testdata.Path(t, "llm", "stories260K-gguf", "golden", "llama-simple_greedy_n128_prompt1.txt")))
	want := strings.TrimSuffix(strings.TrimPrefix(string(golden), "<s> Once upon a time"), "\n")
	if resp.Choices[0].Text != want {
		t.Errorf("text\n got %q\nwant %q", resp.Choices[0].Text, want)
	}
	if resp.Usage.PromptTokens != 5 || resp.Usage.CompletionTokens != 128 || *resp.Choices[0].FinishReason != "length" {
		t.Errorf("usage %+v finish %v", resp.Usage, *resp.Choices[0].FinishReason)
	}
}

func TestStopStringsNotLeaked(t *testing.T) {
	ts := stories(t)
	for _, stream := range []bool{false, true} {
		code, body := ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 64, "temperature": 0, "stop": []string{"Lily."}, "stream": stream})
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		text := string(body)
		if stream {
			text = ""
			for _, ev := range sseEvents(t, body) {
				var c completionResponse
				json.Unmarshal([]byte(ev), &c)
				for _, ch := range c.Choices {
					text += ch.Text
				}
			}
		} else {
			var c completionResponse
			json.Unmarshal(body, &c)
			text = c.Choices[0].Text
		}
		if text != ", there was a little girl named " {
			t.Errorf("stream=%v: text %q", stream, text)
		}
	}
}

func sseEvents(t testing.TB, body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			out = append(out, data)
		}
	}
	if !strings.Contains(string(body), "data: [DONE]") {
		t.Errorf("stream does not end with [DONE]")
	}
	return out
}

func must(t testing.TB, path string) io.Reader {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

func TestInvalidFields(t *testing.T) {
	ts := stories(t)
	cases := []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"prompt": "x", "temperature": -1}, "temperature"},
		{map[string]any{"prompt": "x", "top_p": 1.5}, "top_p"},
		{map[string]any{"prompt": "x", "top_k": -5}, "top_k"},
		{map[string]any{"prompt": "x", "min_p": 2}, "min_p"},
		{map[string]any{"prompt": "x", "presence_penalty": 3}, "presence_penalty"},
		{map[string]any{"prompt": "x", "frequency_penalty": -3}, "frequency_penalty"},
		{map[string]any{"prompt": "x", "repetition_penalty": 0}, "repetition_penalty"},
		{map[string]any{"prompt": "x", "max_tokens": 0}, "max_tokens"},
		{map[string]any{"prompt": "x", "max_tokens": 100000}, "max_tokens"},
		{map[string]any{"prompt": "x", "n": 0}, "n"},
		{map[string]any{"prompt": "x", "logprobs": 50}, "logprobs"},
		{map[string]any{"prompt": "x", "logit_bias": map[string]any{"abc": 1}}, "logit_bias"},
		{map[string]any{"prompt": "x", "stop": 5}, "stop"},
		{map[string]any{"prompt": "x", "echo": true, "max_tokens": -1}, "max_tokens"},
		{map[string]any{"prompt": "x", "suffix": "y"}, "suffix"},
		{map[string]any{"prompt": "x", "response_format": map[string]any{"type": "xml"}}, "response_format.type"},
		{map[string]any{"prompt": []int{1, 99999}}, "prompt"},
		{map[string]any{"prompt": []int{}}, "prompt"},
		{map[string]any{}, "prompt"},
		{map[string]any{"prompt": "x", "temperature": "hot"}, "temperature"},
		{map[string]any{"prompt": "x", "stop_token_ids": []int{-1}}, "stop_token_ids"},
		{map[string]any{"prompt": "x", "stream_options": map[string]any{"include_usage": true}}, "stream_options"},
		{map[string]any{"prompt": "x", "min_tokens": -1}, "min_tokens"},
	}
	for _, c := range cases {
		code, body := ts.post(t, "/v1/completions", c.body)
		var e struct {
			Error apiError `json:"error"`
		}
		json.Unmarshal(body, &e)
		if code != 400 || e.Error.Param != c.param {
			t.Errorf("%v: status %d, param %v (want 400 naming %s): %s", c.body, code, e.Error.Param, c.param, body)
		}
	}
	code, _ := ts.post(t, "/v1/completions", map[string]any{"prompt": "x", "model": "other"})
	if code != 404 {
		t.Errorf("unknown model: status %d", code)
	}
}
