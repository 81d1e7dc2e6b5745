package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/tokenizer"
)

// Embeddings through openai-go on both tiny twins: float and base64 give
// the same vectors; each is the last token's final hidden state from a
// direct forward pass, L2-normalized (tolerance 1e-6 per component: the
// same computation, float32 normalization in float64 on both sides);
// token-id input equals text input; usage counts the prompt tokens.
func TestSDKEmbeddings(t *testing.T) {
	for _, elem := range [][]string{qwen3HF, sparkHF} {
		ts := start(t, Config{}, elem...)
		c := ts.client()
		texts := []string{"Hello there", "The quick brown fox jumps"}
		p := openai.EmbeddingNewParams{Model: "test-model", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}}
		resp, err := c.Embeddings.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		checkShape(t, "embeddings", resp)
		p.EncodingFormat = openai.EmbeddingNewParamsEncodingFormatBase64
		b64, err := c.Embeddings.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		hidden := ts.lm.Model.Config().Hidden
		tokens := 0
		for i, text := range texts {
			ids := ts.lm.Tokenizer.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
			tokens += len(ids)
			out, err := ts.lm.Model.ForwardBatch([]model.Seq{{Cache: ts.lm.Model.NewCache(), Tokens: ids, Hidden: true}})
			if err != nil {
				t.Fatal(err)
			}
			want := normalize(out[0])
			got := resp.Data[i].Embedding
			var s string
			json.Unmarshal([]byte(b64.Data[i].JSON.Embedding.Raw()), &s)
			raw, _ := base64.StdEncoding.DecodeString(s)
			if len(got) != hidden || len(raw) != 4*hidden || resp.Data[i].Index != int64(i) {
				t.Fatalf("%s: %d floats, %d base64 bytes, want %d dims", elem[3], len(got), len(raw), hidden)
			}
			for j := range got {
				f := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
				if float32(got[j]) != f || math.Abs(got[j]-float64(want[j])) > 1e-6 {
					t.Fatalf("%s input %d [%d]: float %v, base64 %v, direct %v", elem[3], i, j, got[j], f, want[j])
				}
			}
		}
		if resp.Usage.PromptTokens != int64(tokens) || resp.Usage.TotalTokens != int64(tokens) {
			t.Errorf("%s: usage %+v, want %d tokens", elem[3], resp.Usage, tokens)
		}
		ids := ts.lm.Tokenizer.Encode(texts[0], tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		byIDs, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "test-model", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: toInt64(ids)}})
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range byIDs.Data[0].Embedding {
			if v != resp.Data[0].Embedding[j] {
				t.Fatalf("%s: token-id input differs at %d", elem[3], j)
			}
		}
	}
}

func toInt64(ids []int) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// Every invalid embeddings field gets a 400 naming it.
func TestInvalidEmbeddingsFields(t *testing.T) {
	ts := start(t, Config{MaxModelLen: 64}, qwen3HF...)
	for _, c := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{}, "input"},
		{map[string]any{"input": ""}, "input"},
		{map[string]any{"input": []string{"a", ""}}, "input"},
		{map[string]any{"input": []any{}}, "input"},
		{map[string]any{"input": 5}, "input"},
		{map[string]any{"input": []int{-1}}, "input"},
		{map[string]any{"input": strings.Repeat("word ", 100)}, "input"},
		{map[string]any{"input": "x", "encoding_format": "int8"}, "encoding_format"},
		{map[string]any{"input": "x", "dimensions": 3}, "dimensions"},
		{map[string]any{"input": "x", "dimensions": "x"}, "dimensions"},
	} {
		code, body := ts.post(t, "/v1/embeddings", c.body)
		if e := errorBody(t, body); code != 400 || e.Param != c.param || e.Type != "invalid_request_error" {
			t.Errorf("%v: status %d, param %v (want 400 naming %s): %s", c.body, code, e.Param, c.param, body)
		}
	}
	hidden := ts.lm.Model.Config().Hidden
	if code, body := ts.post(t, "/v1/embeddings", map[string]any{"input": "x", "dimensions": hidden}); code != 200 {
		t.Errorf("dimensions = the model's %d: %d %s", hidden, code, body)
	}
}

func FuzzEmbeddingsRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 64}}, qwen3HF...)
	h := s.Handler()
	for _, seed := range []string{
		`{"input": "hi"}`,
		`{"input": ["a", "b"], "encoding_format": "base64"}`,
		`{"input": [1, 2, 3], "dimensions": 64}`,
		`{"input": [[1, 2], [3]], "encoding_format": "float", "model": "test-model"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzNamed(t, h, "/v1/embeddings", body) })
}

// The new routes count in vLLM's metrics: request_success_total by
// finish reason, end-to-end latency and prompt tokens.
func TestNewRoutesMetrics(t *testing.T) {
	ts := spark(t)
	for _, r := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/responses", map[string]any{"input": "hi", "max_output_tokens": 3, "temperature": 0}},
		{"/v1/messages", map[string]any{"max_tokens": 3, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"/v1/embeddings", map[string]any{"input": []string{"a", "b"}}},
	} {
		if code, body := ts.post(t, r.path, r.body); code != 200 {
			t.Fatalf("%s: %d %s", r.path, code, body)
		}
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	success, e2e := 0.0, 0.0
	for _, line := range strings.Split(string(text), "\n") {
		v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		switch {
		case strings.HasPrefix(line, "vllm:request_success_total{"):
			success += v
		case strings.HasPrefix(line, "vllm:e2e_request_latency_seconds_count{"):
			e2e += v
		}
	}
	// Responses and Messages finish one request each (length or stop);
	// embeddings count one success per input.
	if success != 4 || e2e != 3 {
		t.Errorf("request_success_total %v (want 4), e2e count %v (want 3)", success, e2e)
	}
}

// A client that drops a Responses or Messages stream frees its request
// within about one engine step, as chat does.
func TestNewRoutesDisconnect(t *testing.T) {
	const step = 20 * time.Millisecond
	ts := startWith(t, setup{wrap: func(m model.Model, _ *load.Loaded) model.Model { return &slowed{m, step} }}, sparkHF...)
	for _, r := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/responses", map[string]any{"input": "hi", "max_output_tokens": 200, "stream": true}},
		{"/v1/messages", map[string]any{"max_tokens": 200, "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
	} {
		raw, _ := json.Marshal(r.body)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+r.path, strings.NewReader(string(raw)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", r.path, err, resp)
		}
		for ts.eng.Stats().Running != 1 {
			time.Sleep(time.Millisecond)
		}
		steps, dropped := ts.eng.Stats().Steps, time.Now()
		cancel()
		resp.Body.Close()
		for ts.eng.Stats().Running != 0 {
			if time.Since(dropped) > hangGuard {
				t.Fatalf("%s: still running after %v", r.path, time.Since(dropped))
			}
			time.Sleep(time.Millisecond)
		}
		// As TestDisconnect: one step may be under way at the drop, and
		// the server hears of it a moment later.
		if took := ts.eng.Stats().Steps - steps; took > 3 {
			t.Errorf("%s: %d steps to leave the running batch, want about one", r.path, took)
		}
	}
}
