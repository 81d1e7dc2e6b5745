package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
)

// errorBody decodes an OpenAI-shaped error and checks that it has all
// four keys.
func errorBody(t testing.TB, body []byte) apiError {
	t.Helper()
	var e struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e.Error[k]; !ok {
			t.Errorf("error lacks %q: %s", k, body)
		}
	}
	var out struct {
		Error apiError `json:"error"`
	}
	json.Unmarshal(body, &out)
	return out.Error
}

// Every invalid chat field gets a 400 whose param names it.
func TestInvalidChatFields(t *testing.T) {
	ts := spark(t)
	user := []map[string]any{{"role": "user", "content": "hi"}}
	tool := map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}
	with := func(kv ...any) map[string]any {
		b := map[string]any{"messages": user}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{}, "messages"},
		{with("messages", nil), "messages"},
		{with("messages", []any{}), "messages"},
		{with("messages", "hi"), "messages"},
		{with("messages", []any{"hi"}), "messages[0]"},
		{with("messages", []any{map[string]any{"role": "wizard", "content": "x"}}), "messages[0].role"},
		{with("messages", []any{map[string]any{"role": "user", "content": "x"}, map[string]any{"role": 5, "content": "x"}}), "messages[1].role"},
		{with("messages", []any{map[string]any{"role": "user", "content": 5}}), "messages[0].content"},
		{with("messages", []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "http://x"}}}}}), "messages[0].content[0].type"},
		{with("tools", "f"), "tools"},
		{with("tools", []any{map[string]any{"type": "function"}}), "tools[0]"},
		{with("tools", []any{map[string]any{"type": "retrieval", "function": map[string]any{"name": "f"}}}), "tools[0].type"},
		{with("tool_choice", "sometimes", "tools", []any{tool}), "tool_choice"},
		{with("tool_choice", "required"), "tool_choice"},
		{with("tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "g"}}, "tools", []any{tool}), "tool_choice"},
		{with("tool_choice", map[string]any{"type": "function"}, "tools", []any{tool}), "tool_choice"},
		{with("tool_choice", 3, "tools", []any{tool}), "tool_choice"},
		{with("parallel_tool_calls", "yes"), "parallel_tool_calls"},
		{with("top_logprobs", 5), "top_logprobs"},
		{with("logprobs", true, "top_logprobs", 21), "top_logprobs"},
		{with("logprobs", "yes"), "logprobs"},
		{with("chat_template_kwargs", "x"), "chat_template_kwargs"},
		{with("chat_template_kwargs", map[string]any{"add_generation_prompt": false}), "chat_template_kwargs"},
		{with("add_generation_prompt", "yes"), "add_generation_prompt"},
		{with("response_format", map[string]any{"type": "json_schema"}), "response_format.json_schema.schema"},
		{with("n", 17), "n"},
		{with("max_completion_tokens", 0), "max_completion_tokens"},
		{with("max_completion_tokens", 1<<30), "max_completion_tokens"},
		{with("max_tokens", -1), "max_tokens"},
		{with("temperature", -0.5), "temperature"},
		{with("top_p", 0), "top_p"},
		{with("top_k", -2), "top_k"},
		{with("min_p", 1.5), "min_p"},
		{with("repetition_penalty", -1), "repetition_penalty"},
		{with("seed", 1.5), "seed"},
		{with("seed", "x"), "seed"},
		{with("stop", []any{1}), "stop"},
		{with("stop_token_ids", []int{1 << 20}), "stop_token_ids"},
		{with("logit_bias", map[string]any{"x": 1}), "logit_bias"},
		{with("logit_bias", map[string]any{"1": "a"}), "logit_bias"},
		{with("logit_bias", map[string]any{"100000": 1}), "logit_bias"},
		{with("allowed_token_ids", []int{}), "allowed_token_ids"},
		{with("allowed_token_ids", []int{-1}), "allowed_token_ids"},
		{with("stream_options", map[string]any{"include_usage": true}), "stream_options"},
		{with("stream", true, "stream_options", map[string]any{"include_usage": "yes"}), "stream_options.include_usage"},
		{with("min_tokens", -3), "min_tokens"},
		{with("user", 5), "user"},
	}
	for _, c := range cases {
		code, body := ts.post(t, "/v1/chat/completions", c.body)
		e := errorBody(t, body)
		if code != 400 || e.Param != c.param || e.Type != "invalid_request_error" {
			t.Errorf("%v: status %d, param %v (want 400 naming %s): %s", c.body, code, e.Param, c.param, body)
		}
	}
	code, body := ts.post(t, "/v1/chat/completions", with("model", "gpt-4o"))
	if e := errorBody(t, body); code != 404 || e.Param != "model" {
		t.Errorf("unknown model: %d %s", code, body)
	}
	for _, raw := range []string{"", "{", "[1]", `{"messages": []} {}`, "null"} {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if errorBody(t, body); resp.StatusCode != 400 {
			t.Errorf("body %q: status %d", raw, resp.StatusCode)
		}
	}
}

// A model without a chat template refuses chat with a 400 naming
// messages, and still serves completions.
func TestChatWithoutTemplate(t *testing.T) {
	ts := stories(t)
	code, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}})
	if e := errorBody(t, body); code != 400 || e.Param != "messages" {
		t.Errorf("status %d: %s", code, body)
	}
}

// The SDK sees OpenAI errors with their status, type, param and code.
func TestSDKErrors(t *testing.T) {
	ts := stories(t)
	c := ts.client()
	p := completionParams(storiesPrompt, 4)
	p.Model = "gpt-4o"
	_, err := c.Completions.New(context.Background(), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Param != "model" || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v", err)
	}
	p.Model = "test-model"
	p.TopP = openai.Float(7)
	_, err = c.Completions.New(context.Background(), p)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "top_p" || apiErr.Type != "invalid_request_error" || apiErr.Message == "" {
		t.Errorf("top_p 7: %v", err)
	}
	st := c.Completions.NewStreaming(context.Background(), p)
	for st.Next() {
	}
	if err := st.Err(); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("streaming with top_p 7: %v", err)
	}
}

// --api-key: every endpoint but /health (and vLLM's /ping and /version)
// needs the bearer token.
func TestAPIKey(t *testing.T) {
	ts := start(t, Config{APIKey: "sekret"}, "llm", "stories260K-gguf", "stories260K.gguf")
	get := func(path, auth string) int {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 401 {
			if e := errorBody(t, body); e.Type != "authentication_error" {
				t.Errorf("401 type %q", e.Type)
			}
		}
		return resp.StatusCode
	}
	for _, path := range []string{"/health", "/ping", "/version"} {
		if code := get(path, ""); code != 200 {
			t.Errorf("%s without a key: %d", path, code)
		}
	}
	for _, path := range []string{"/score", "/v1/score", "/rerank", "/v1/rerank", "/v2/rerank"} {
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("POST %s without a key: %d, want 401", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/v1/models", "/metrics"} {
		for _, auth := range []string{"", "Bearer wrong", "sekret", "Bearer sekret2", "bearer sekret"} {
			if code := get(path, auth); code != 401 {
				t.Errorf("%s with %q: %d, want 401", path, auth, code)
			}
		}
		if code := get(path, "Bearer sekret"); code != 200 {
			t.Errorf("%s with the key: %d", path, code)
		}
	}
	var apiErr *openai.Error
	wrong := ts.client(option.WithAPIKey("wrong"))
	_, err := wrong.Completions.New(context.Background(), completionParams(storiesPrompt, 2))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("SDK with a wrong key: %v", err)
	}
	right := ts.client(option.WithAPIKey("sekret"))
	resp, err := right.Completions.New(context.Background(), completionParams(storiesPrompt, 2))
	if err != nil || len(resp.Choices) != 1 {
		t.Errorf("SDK with the key: %v", err)
	}
}

// A body over MaxRequestBytes is refused with 413 before it is parsed.
func TestRequestTooLarge(t *testing.T) {
	ts := start(t, Config{MaxRequestBytes: 1 << 10}, "llm", "stories260K-gguf", "stories260K.gguf")
	code, body := ts.post(t, "/v1/completions", map[string]any{"prompt": strings.Repeat("x", 2<<10), "max_tokens": 1})
	if errorBody(t, body); code != 413 {
		t.Errorf("status %d: %s", code, body)
	}
	code, _ = ts.post(t, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1})
	if code != 200 {
		t.Errorf("small body: %d", code)
	}
}

// openStream starts a streaming completion and returns once its first
// token arrived; cancel drops the connection.
func openStream(t testing.TB, url string, body map[string]any) (drop func(), lines *bufio.Reader) {
	t.Helper()
	raw, _ := json.Marshal(body)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", bytes.NewReader(raw))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: {") {
			break
		}
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return func() { cancel(); resp.Body.Close() }, r
}

// When the waiting queue is full a request gets 429 with Retry-After.
func TestQueueFull(t *testing.T) {
	ts := startWith(t, setup{eng: engine.Config{MaxNumSeqs: 1, MaxWaiting: 1}}, "llm", "stories260K-gguf", "stories260K.gguf")
	long := map[string]any{"prompt": storiesPrompt, "max_tokens": 400, "ignore_eos": true, "stream": true}
	cancelRunning, _ := openStream(t, ts.URL, long) // running
	defer cancelRunning()
	// The second waits behind it (no token arrives until the first ends).
	raw, _ := json.Marshal(long)
	ctx, cancelWaiting := context.WithCancel(context.Background())
	defer cancelWaiting()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", bytes.NewReader(raw))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for ts.eng.Stats().Waiting != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("second request never queued: %+v", ts.eng.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x", "max_tokens": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	e := errorBody(t, body)
	if resp.StatusCode != 429 || e.Type != "rate_limit_error" {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	// The SDK retries 429 by default, honouring Retry-After; with retries
	// off it reports the status.
	var apiErr *openai.Error
	c := ts.client()
	_, err = c.Completions.New(context.Background(), completionParams("x", 2))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("SDK: %v", err)
	}
}

// runningGauge reads vllm:num_requests_running from /metrics.
func runningGauge(t testing.TB, url string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "vllm:num_requests_running{") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("no vllm:num_requests_running in /metrics")
	return 0
}

// hangGuard ends a wait for the engine that should take a few steps.
const hangGuard = 10 * time.Second

// A client that drops its connection has its request aborted: it leaves
// vllm:num_requests_running within about one engine step (steps are
// slowed to 20 ms so they can be counted against the client's clock),
// streaming or not, and the other requests carry on.
//
// The bound is in engine steps, counted; the wall-clock limit only stops
// a hang (a step of the generic kernels on a loaded machine can take
// longer than the 20 ms sleep).
func TestDisconnect(t *testing.T) {
	const step = 20 * time.Millisecond
	ts := startWith(t, setup{wrap: func(m model.Model, _ *load.Loaded) model.Model { return &slowed{m, step} }},
		"llm", "stories260K-gguf", "stories260K.gguf")
	long := map[string]any{"prompt": storiesPrompt, "max_tokens": 400, "ignore_eos": true, "stream": true}

	// A bystander keeps streaming throughout.
	_, other := openStream(t, ts.URL, long)

	waitRunning := func(want int, since time.Time, what string) {
		t.Helper()
		steps := ts.eng.Stats().Steps
		for ts.eng.Stats().Running != want {
			if time.Since(since) > hangGuard {
				t.Fatalf("%s: still %d running after %v", what, ts.eng.Stats().Running, time.Since(since))
			}
			time.Sleep(time.Millisecond)
		}
		took := ts.eng.Stats().Steps - steps
		t.Logf("%s: %d running after %v, %d steps", what, want, time.Since(since).Round(time.Millisecond), took)
		// The engine notices at its next step boundary; one step may be
		// under way when the connection drops, and the server hears of
		// the drop a moment after the client.
		if took > 3 {
			t.Errorf("%s: %d steps to leave the running batch, want about one", what, took)
		}
		if got := runningGauge(t, ts.URL); got != float64(want) {
			t.Errorf("%s: vllm:num_requests_running %v, want %d", what, got, want)
		}
	}
	if got := runningGauge(t, ts.URL); got != 1 {
		t.Fatalf("vllm:num_requests_running %v with one stream", got)
	}

	cancel, _ := openStream(t, ts.URL, long)
	waitRunning(2, time.Now(), "second stream start")
	dropped := time.Now()
	cancel()
	waitRunning(1, dropped, "streaming client drop")

	// Non-streaming: the client gives up while the request runs.
	ctx, cancelReq := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := completionParams(storiesPrompt, 400)
		c := ts.client()
		_, err := c.Completions.New(ctx, p, option.WithJSONSet("ignore_eos", true))
		done <- err
	}()
	waitRunning(2, time.Now(), "non-streaming start")
	time.Sleep(3 * step)
	dropped = time.Now()
	cancelReq()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v", err)
	}
	waitRunning(1, dropped, "non-streaming client drop")

	// The bystander is unharmed: its stream still delivers tokens.
	for range 3 {
		if _, err := other.ReadString('\n'); err != nil {
			t.Fatalf("bystander stream broke: %v", err)
		}
	}
	if kv := ts.eng.Stats().KVUsedBytes; kv <= 0 {
		t.Errorf("KV used %d with one stream running", kv)
	}
}

// The engine loop sends each request's events into a small buffer and
// blocks when it is full, so the server must keep reading them whatever
// its client does: a client that stops reading its stream, or a choice
// that ended on a stop string, must not stall the engine for everyone.
func TestRelayNeverBlocks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan engine.Event) // unbuffered: every send needs a reader
	out := relay(ctx, in)
	sendAll := func(n int) {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for i := range n {
			select {
			case in <- engine.Event{}:
			case <-timeout:
				t.Fatalf("engine blocked at event %d", i)
			}
		}
	}
	sendAll(10000) // nobody reads out
	if ev := <-out; ev.Finish != "" {
		t.Errorf("first event %+v", ev)
	}
	cancel() // the reader is gone for good
	sendAll(10000)
	close(in)
	for range out { // closed once the queue is dropped
	}
}

// While shutting down, new generation requests get 503 with Retry-After;
// the rest still answer (readiness turns 503: probes_test.go).
func TestDraining(t *testing.T) {
	ts := stories(t)
	ts.srv.SetDraining()
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x", "max_tokens": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if errorBody(t, body); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("draining: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if code, _ := ts.post(t, "/tokenize", map[string]any{"prompt": "x"}); code != 200 {
		t.Errorf("tokenize while draining: %d", code)
	}
}

// An engine failure mid-generation is a 500 for a whole response and an
// error event (then [DONE]) in a stream, which the SDK reports.
func TestEngineError(t *testing.T) {
	for _, stream := range []bool{false, true} {
		ts := startWith(t, setup{wrap: func(m model.Model, _ *load.Loaded) model.Model { return &failing{Model: m} }},
			"llm", "stories260K-gguf", "stories260K.gguf")
		c := ts.client()
		p := completionParams(storiesPrompt, 32)
		var err error
		if stream {
			st := c.Completions.NewStreaming(context.Background(), p)
			for st.Next() {
			}
			err = st.Err()
			code, body := ts.post(t, "/v1/completions", map[string]any{"prompt": storiesPrompt, "stream": true})
			if events := sseEvents(t, body); code != 200 || len(events) == 0 || !strings.Contains(events[len(events)-1], `"error"`) {
				t.Errorf("stream: %d %s", code, body)
			}
		} else {
			_, err = c.Completions.New(context.Background(), p)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "backend failure") {
				t.Errorf("status: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "backend failure") {
			t.Errorf("stream=%v: client error %v", stream, err)
		}
	}
}
