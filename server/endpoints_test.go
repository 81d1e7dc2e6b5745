package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/siskin-ml/siskin/tokenizer"
)

// GET /health is 200 with an empty body; /v1/models lists the served
// model in the shape the SDK expects, and /v1/models/{id} finds it.
func TestHealthAndModels(t *testing.T) {
	ts := start(t, Config{Version: "test"}, "llm", "stories260K-gguf", "stories260K.gguf")
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("/health: %d %q", resp.StatusCode, body)
	}
	// vLLM's /ping (GET and POST) answers as /health; /version names the binary's.
	for _, req := range []func() (*http.Response, error){
		func() (*http.Response, error) { return http.Get(ts.URL + "/ping") },
		func() (*http.Response, error) { return http.Post(ts.URL+"/ping", "", nil) },
	} {
		if resp, err := req(); err != nil || resp.StatusCode != 200 {
			t.Errorf("/ping: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
	}
	resp, err = http.Get(ts.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"version":"test"}`+"\n" {
		t.Errorf("/version: %d %q", resp.StatusCode, body)
	}
	c := ts.client()
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "models", page)
	if len(page.Data) != 1 || page.Data[0].ID != "test-model" || page.Data[0].Object != "model" || page.Data[0].OwnedBy == "" || page.Data[0].Created == 0 {
		t.Errorf("models %s", page.RawJSON())
	}
	if raw := page.Data[0].JSON.ExtraFields["max_model_len"].Raw(); raw != strconv.Itoa(ts.srv.cfg.MaxModelLen) {
		t.Errorf("max_model_len %s", raw)
	}
	m, err := c.Models.Get(context.Background(), "test-model")
	if err != nil || m.ID != "test-model" {
		t.Errorf("get model: %v %+v", err, m)
	}
	var apiErr *openai.Error
	if _, err := c.Models.Get(context.Background(), "gpt-4o"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("get unknown model: %v", err)
	}
	code, _ := ts.post(t, "/v1/nope", map[string]any{})
	if code != 404 {
		t.Errorf("unknown route: %d", code)
	}
}

// /tokenize and /detokenize answer in vLLM's shapes.
func TestTokenizeShapes(t *testing.T) {
	ts := stories(t)
	tok := ts.lm.Tokenizer
	want := tok.Encode(storiesPrompt, tokenizer.EncodeOptions{AddSpecial: true})
	code, body := ts.post(t, "/tokenize", map[string]any{"model": "test-model", "prompt": storiesPrompt})
	var raw map[string]json.RawMessage
	json.Unmarshal(body, &raw)
	if code != 200 || len(raw) != 4 || string(raw["token_strs"]) != "null" || string(raw["max_model_len"]) != strconv.Itoa(ts.srv.cfg.MaxModelLen) {
		t.Errorf("tokenize: %d %s", code, body)
	}
	var resp tokenizeResponse
	json.Unmarshal(body, &resp)
	if resp.Count != len(want) || !slices.Equal(resp.Tokens, want) {
		t.Errorf("tokens %v, want %v", resp.Tokens, want)
	}
	_, body = ts.post(t, "/tokenize", map[string]any{"prompt": storiesPrompt, "add_special_tokens": false, "return_token_strs": true})
	resp = tokenizeResponse{}
	json.Unmarshal(body, &resp)
	if !slices.Equal(resp.Tokens, want[1:]) || len(resp.TokenStrs) != len(want)-1 || resp.TokenStrs[0] != tok.Piece(want[1]) {
		t.Errorf("without special tokens: %s", body)
	}
	code, body = ts.post(t, "/detokenize", map[string]any{"model": "test-model", "tokens": want[1:]})
	var de map[string]any
	json.Unmarshal(body, &de)
	if code != 200 || len(de) != 1 || de["prompt"] != tok.Decode(want[1:]) {
		t.Errorf("detokenize: %d %s", code, body)
	}
	for _, c := range []struct {
		path  string
		body  map[string]any
		code  int
		param string
	}{
		{"/tokenize", map[string]any{}, 400, "prompt"},
		{"/tokenize", map[string]any{"prompt": 5}, 400, "prompt"},
		{"/tokenize", map[string]any{"prompt": "x", "model": "other"}, 404, "model"},
		{"/tokenize", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, 400, "messages"},
		{"/detokenize", map[string]any{"tokens": []int{1, 1 << 20}}, 400, "tokens"},
		{"/detokenize", map[string]any{"tokens": "x"}, 400, "tokens"},
		{"/detokenize", map[string]any{"tokens": []int{1}, "model": "other"}, 404, "model"},
	} {
		code, body := ts.post(t, c.path, c.body)
		if e := errorBody(t, body); code != c.code || e.Param != c.param {
			t.Errorf("%s %v: %d %s", c.path, c.body, code, body)
		}
	}
}

// /tokenize with messages and tools gives the prompt chat renders.
func TestTokenizeChat(t *testing.T) {
	ts := spark(t)
	c := ts.client()
	p := chatParams(1, openai.SystemMessage("S"), openai.UserMessage("Hi"))
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	resp, err := c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	var chatIDs []int
	json.Unmarshal([]byte(resp.JSON.ExtraFields["prompt_token_ids"].Raw()), &chatIDs)
	msgs, _ := json.Marshal(p.Messages)
	tools, _ := json.Marshal(p.Tools)
	code, body := ts.post(t, "/tokenize", map[string]any{"messages": json.RawMessage(msgs), "tools": json.RawMessage(tools)})
	var tr tokenizeResponse
	json.Unmarshal(body, &tr)
	if code != 200 || !slices.Equal(tr.Tokens, chatIDs) || tr.Count != int(resp.Usage.PromptTokens) {
		t.Errorf("tokenize %d %s\nchat prompt %v", code, body, chatIDs)
	}
	_, body = ts.post(t, "/tokenize", map[string]any{"messages": json.RawMessage(msgs), "chat_template_kwargs": map[string]any{"enable_thinking": false}})
	tr = tokenizeResponse{}
	json.Unmarshal(body, &tr)
	if text := ts.lm.Tokenizer.Decode(tr.Tokens); len(text) < 9 || text[len(text)-8:] != "</think>" {
		t.Errorf("enable_thinking false: prompt ends %q", text)
	}
}

// /metrics has vLLM's metric names, labelled with the model name, and
// counts what a request did.
func TestMetrics(t *testing.T) {
	ts := stories(t)
	code, body := ts.post(t, "/v1/completions", map[string]any{"prompt": storiesPrompt, "max_tokens": 8, "ignore_eos": true})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	values := map[string]float64{}
	for _, line := range strings.Split(string(text), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, _ := strings.Cut(line[:strings.LastIndexByte(line, ' ')], "{")
		if !strings.Contains(labels, `model_name="test-model"`) {
			t.Errorf("no model_name label: %s", line)
		}
		if name == "vllm:request_success_total" {
			name += "{" + labels
		}
		v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		values[name] += v
	}
	for name, want := range map[string]float64{
		"vllm:num_requests_running":                                                    0,
		"vllm:num_requests_waiting":                                                    0,
		"vllm:kv_cache_usage_perc":                                                     0,
		"vllm:prefix_cache_queries_total":                                              5,
		"vllm:prefix_cache_hits_total":                                                 0,
		"vllm:prompt_tokens_total":                                                     5,
		"vllm:generation_tokens_total":                                                 8,
		"vllm:time_to_first_token_seconds_count":                                       1,
		"vllm:inter_token_latency_seconds_count":                                       7,
		"vllm:e2e_request_latency_seconds_count":                                       1,
		`vllm:request_success_total{finished_reason="length",model_name="test-model"}`: 1,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}

// CORS is off unless origins are configured; preflights then succeed
// without the API key, as browsers send none.
func TestCORS(t *testing.T) {
	preflight := func(url string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", url+"/v1/chat/completions", nil)
		req.Header.Set("Origin", "https://app.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	off := stories(t)
	if resp := preflight(off.URL); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS on by default: %v", resp.Header)
	}
	on := start(t, Config{CORSOrigins: []string{"https://app.example"}, APIKey: "k"}, "llm", "stories260K-gguf", "stories260K.gguf")
	resp := preflight(on.URL)
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}
