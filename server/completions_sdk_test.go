package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

const storiesPrompt = "Once upon a time"

func completionParams(prompt string, maxTokens int64) openai.CompletionNewParams {
	return openai.CompletionNewParams{
		Model:     "test-model",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(maxTokens),
	}
}

// tokenIDs reads the vLLM extension field token_ids of an SDK choice.
func tokenIDs(t testing.TB, raw string) []int {
	t.Helper()
	var ids []int
	if err := json.Unmarshal([]byte(raw), &ids); err != nil {
		t.Fatalf("token_ids %q: %v", raw, err)
	}
	return ids
}

// streamCompletion runs a streaming completion through the SDK and joins
// each choice's text and token ids; it also returns the usage chunk.
func streamCompletion(t testing.TB, c openai.Client, p openai.CompletionNewParams, opts ...option.RequestOption) (texts map[int64]string, ids map[int64][]int, finish map[int64]string, usage *openai.CompletionUsage) {
	t.Helper()
	st := c.Completions.NewStreaming(context.Background(), p, opts...)
	defer st.Close()
	texts, ids, finish = map[int64]string{}, map[int64][]int{}, map[int64]string{}
	for st.Next() {
		chunk := st.Current()
		checkShape(t, "chunk", chunk)
		if chunk.Object != "text_completion" || chunk.ID == "" {
			t.Errorf("chunk object %q id %q", chunk.Object, chunk.ID)
		}
		if chunk.JSON.Usage.Valid() {
			if usage != nil {
				t.Errorf("two usage chunks")
			}
			u := chunk.Usage
			usage = &u
			if len(chunk.Choices) != 0 {
				t.Errorf("usage chunk has %d choices", len(chunk.Choices))
			}
		}
		for _, ch := range chunk.Choices {
			if usage != nil {
				t.Errorf("choice after the usage chunk")
			}
			if finish[ch.Index] != "" {
				t.Errorf("choice %d: chunk after its finish_reason", ch.Index)
			}
			texts[ch.Index] += ch.Text
			if raw := ch.JSON.ExtraFields["token_ids"].Raw(); raw != "" && raw != "null" {
				ids[ch.Index] = append(ids[ch.Index], tokenIDs(t, raw)...)
			}
			if ch.FinishReason != "" {
				finish[ch.Index] = string(ch.FinishReason)
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return texts, ids, finish, usage
}

// runCLI generates the way `siskin run` does (engine.Generate on a
// private engine, EOS stops), returning the ids and their text.
func runCLI(t testing.TB, ts *testServer, prompt string, n int) ([]int, string) {
	t.Helper()
	tok := ts.lm.Tokenizer
	ids := tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	sp := sample.Defaults()
	sp.Temperature, sp.Seeded = 0, true
	seq, err := sample.NewSequence(sp, ids)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := engine.Generate(context.Background(), ts.lm.Model, engine.Request{Prompt: ids, MaxTokens: n, Sampler: seq, Stop: tok.IsEOG}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec := tok.NewStreamDecoder()
	for _, id := range ids {
		dec.Add(id)
	}
	text := ""
	for _, id := range out {
		text += dec.Add(id)
	}
	return out, text + dec.Flush()
}

// Greedy output through the server, streamed or not, is the output of
// the command line's path for the same prompt.
func TestSDKCompletionGreedyMatchesRun(t *testing.T) {
	ts := stories(t)
	c := ts.client()
	const n = 96
	wantIDs, wantText := runCLI(t, ts, storiesPrompt, n)

	p := completionParams(storiesPrompt, n)
	p.Temperature = openai.Float(0)
	resp, err := c.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "completion", resp)
	if resp.Object != "text_completion" || resp.Model != "test-model" || len(resp.Choices) != 1 {
		t.Fatalf("response %s", resp.RawJSON())
	}
	ch := resp.Choices[0]
	if got := tokenIDs(t, ch.JSON.ExtraFields["token_ids"].Raw()); !slices.Equal(got, wantIDs) {
		t.Errorf("token ids\n got %v\nwant %v", got, wantIDs)
	}
	if ch.Text != wantText {
		t.Errorf("text\n got %q\nwant %q", ch.Text, wantText)
	}
	wantFinish := openai.CompletionChoiceFinishReasonLength
	if len(wantIDs) < n {
		wantFinish = openai.CompletionChoiceFinishReasonStop
	}
	if ch.FinishReason != wantFinish {
		t.Errorf("finish_reason %q, want %q", ch.FinishReason, wantFinish)
	}
	if resp.Usage.CompletionTokens != int64(len(wantIDs)) || resp.Usage.PromptTokens != 5 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage %s", resp.Usage.RawJSON())
	}

	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	texts, ids, finish, usage := streamCompletion(t, c, p, option.WithJSONSet("return_token_ids", true))
	if texts[0] != wantText || !slices.Equal(ids[0], wantIDs) || finish[0] != string(wantFinish) {
		t.Errorf("stream: text %q ids %v finish %q", texts[0], ids[0], finish[0])
	}
	if usage == nil || usage.CompletionTokens != int64(len(wantIDs)) || usage.PromptTokens != 5 {
		t.Errorf("stream usage %+v", usage)
	}
}

// Without include_usage a stream carries no usage chunk.
func TestSDKCompletionStreamNoUsage(t *testing.T) {
	ts := stories(t)
	_, _, finish, usage := streamCompletion(t, ts.client(), completionParams(storiesPrompt, 8))
	if usage != nil || finish[0] != "length" {
		t.Errorf("usage %+v finish %q", usage, finish[0])
	}
}

// n > 1 and several prompts: one choice per prompt and n, indexed
// prompt-major; seeded choices are reproducible, streamed or not.
func TestSDKCompletionN(t *testing.T) {
	ts := stories(t)
	c := ts.client()
	p := openai.CompletionNewParams{
		Model:       "test-model",
		Prompt:      openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"Once upon a time", "The cat"}},
		MaxTokens:   openai.Int(24),
		N:           openai.Int(3),
		Seed:        openai.Int(1234),
		Temperature: openai.Float(1),
	}
	resp, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "completion", resp)
	if len(resp.Choices) != 6 {
		t.Fatalf("%d choices, want 6", len(resp.Choices))
	}
	texts := map[int64]string{}
	for i, ch := range resp.Choices {
		if ch.Index != int64(i) {
			t.Errorf("choice %d has index %d", i, ch.Index)
		}
		texts[ch.Index] = ch.Text
	}
	if texts[0] == texts[1] && texts[1] == texts[2] {
		t.Errorf("n=3 with a seed gave three equal choices %q", texts[0])
	}
	// As in vLLM and OpenAI, each prompt counts once whatever n is.
	promptLen := func(s string) int64 {
		return int64(len(ts.lm.Tokenizer.Encode(s, tokenizer.EncodeOptions{AddSpecial: true})))
	}
	if want := promptLen("Once upon a time") + promptLen("The cat"); resp.Usage.PromptTokens != want {
		t.Errorf("prompt_tokens %d, want %d", resp.Usage.PromptTokens, want)
	}
	again, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range again.Choices {
		if ch.Text != texts[int64(i)] {
			t.Errorf("choice %d not reproducible with the same seed: %q vs %q", i, ch.Text, texts[int64(i)])
		}
	}
	streamed, _, finish, _ := streamCompletion(t, c, p)
	for i := range int64(6) {
		if streamed[i] != texts[i] || finish[i] == "" {
			t.Errorf("streamed choice %d: %q (finish %q), want %q", i, streamed[i], finish[i], texts[i])
		}
	}
	p.Seed = openai.Int(99)
	other, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if other.Choices[0].Text == texts[0] && other.Choices[1].Text == texts[1] {
		t.Errorf("another seed gave the same choices")
	}
}

// Legacy completions logprobs: one entry per generated token, the
// sampled token among its top alternatives, offsets into the text.
func TestSDKCompletionLogprobs(t *testing.T) {
	ts := stories(t)
	c := ts.client()
	p := completionParams(storiesPrompt, 16)
	p.Temperature = openai.Float(0)
	p.Logprobs = openai.Int(3)
	check := func(what, text string, lp openai.CompletionChoiceLogprobs) {
		t.Helper()
		n := len(lp.Tokens)
		if n == 0 || len(lp.TokenLogprobs) != n || len(lp.TopLogprobs) != n || len(lp.TextOffset) != n {
			t.Fatalf("%s: lengths %d %d %d %d", what, n, len(lp.TokenLogprobs), len(lp.TopLogprobs), len(lp.TextOffset))
		}
		if joined := strings.Join(lp.Tokens, ""); joined != text {
			t.Errorf("%s: tokens join to %q, text is %q", what, joined, text)
		}
		for i := range n {
			if lp.TextOffset[i] != int64(len(strings.Join(lp.Tokens[:i], ""))) {
				t.Errorf("%s: text_offset[%d] = %d", what, i, lp.TextOffset[i])
			}
			if len(lp.TopLogprobs[i]) != 3 {
				t.Errorf("%s: %d top logprobs at %d, want 3", what, len(lp.TopLogprobs[i]), i)
			}
			best := math.Inf(-1)
			for _, v := range lp.TopLogprobs[i] {
				best = max(best, v)
			}
			// Greedy: the sampled token is the most likely one.
			if lp.TokenLogprobs[i] > 0 || math.Abs(lp.TokenLogprobs[i]-best) > 1e-5 {
				t.Errorf("%s: token %d logprob %v, best of the top %v", what, i, lp.TokenLogprobs[i], best)
			}
		}
	}
	resp, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "completion", resp)
	check("completion", resp.Choices[0].Text, resp.Choices[0].Logprobs)

	st := c.Completions.NewStreaming(context.Background(), p)
	var all openai.CompletionChoiceLogprobs
	text := ""
	for st.Next() {
		for _, ch := range st.Current().Choices {
			text += ch.Text
			lp := ch.Logprobs
			all.Tokens = append(all.Tokens, lp.Tokens...)
			all.TokenLogprobs = append(all.TokenLogprobs, lp.TokenLogprobs...)
			all.TopLogprobs = append(all.TopLogprobs, lp.TopLogprobs...)
			all.TextOffset = append(all.TextOffset, lp.TextOffset...)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	check("stream", text, all)
	if !slices.Equal(all.TokenLogprobs, resp.Choices[0].Logprobs.TokenLogprobs) {
		t.Errorf("streamed logprobs differ from the response's")
	}

	// logprobs 0: no alternatives, only the sampled token ("up to
	// logprobs+1 elements").
	p.Logprobs = openai.Int(0)
	resp, err = c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if lp := resp.Choices[0].Logprobs; len(lp.TokenLogprobs) != 16 || len(lp.TopLogprobs[0]) != 1 || lp.TopLogprobs[0][lp.Tokens[0]] != lp.TokenLogprobs[0] {
		t.Errorf("logprobs 0: %s", lp.RawJSON())
	}
}

// A stop string ends the choice with finish_reason stop, is not part of
// the text, and streaming gives the same text.
func TestSDKCompletionStop(t *testing.T) {
	ts := stories(t)
	c := ts.client()
	p := completionParams(storiesPrompt, 64)
	p.Temperature = openai.Float(0)
	full, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// Stop on a word from the middle of the greedy text.
	words := strings.Fields(full.Choices[0].Text)
	stop := words[len(words)/2]
	want := full.Choices[0].Text[:strings.Index(full.Choices[0].Text, stop)]
	p.Stop = openai.CompletionNewParamsStopUnion{OfStringArray: []string{stop, "zzzz"}}
	resp, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Text != want || ch.FinishReason != "stop" {
		t.Errorf("stop %q: text %q finish %q, want %q", stop, ch.Text, ch.FinishReason, want)
	}
	if raw := ch.JSON.ExtraFields["stop_reason"].Raw(); raw != `"`+stop+`"` {
		t.Errorf("stop_reason %s, want %q", raw, stop)
	}
	texts, _, finish, _ := streamCompletion(t, c, p)
	if texts[0] != want || finish[0] != "stop" {
		t.Errorf("stream: text %q finish %q", texts[0], finish[0])
	}
}

// A seeded sampled request returns the same tokens and logprobs alone
// and among 8 concurrent requests (batch invariance through the server).
func TestSDKSeededBatchInvariance(t *testing.T) {
	for _, m := range [][]string{
		{"llm", "stories260K-gguf", "stories260K.gguf"},
		{"llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf"},
	} {
		t.Run(m[len(m)-1], func(t *testing.T) {
			ts := start(t, Config{}, m...)
			c := ts.client()
			req := func(i int) openai.CompletionNewParams {
				p := completionParams([]string{storiesPrompt, "The dog ran", "Lily and Ben", "One day"}[i%4], 40)
				p.Temperature = openai.Float(0.9)
				p.Seed = openai.Int(int64(1000 + i))
				p.Logprobs = openai.Int(2)
				return p
			}
			type result struct {
				ids []int
				lp  []float64
			}
			run := func(i int) result {
				resp, err := c.Completions.New(context.Background(), req(i), option.WithJSONSet("return_token_ids", true), option.WithJSONSet("ignore_eos", true))
				if err != nil {
					t.Error(err)
					return result{}
				}
				ch := resp.Choices[0]
				return result{tokenIDs(t, ch.JSON.ExtraFields["token_ids"].Raw()), ch.Logprobs.TokenLogprobs}
			}
			alone := run(0)
			if len(alone.ids) != 40 {
				t.Fatalf("alone: %d tokens", len(alone.ids))
			}
			for round := range 2 {
				results := make([]result, 8)
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Go(func() { results[i] = run(i * 4) }) // i*4: same prompt as request 0, other seeds
				}
				wg.Wait()
				if !slices.Equal(results[0].ids, alone.ids) || !slices.Equal(results[0].lp, alone.lp) {
					t.Errorf("round %d: seeded request differs among 8 concurrent ones\nalone %v\nbatch %v", round, alone.ids, results[0].ids)
				}
				if slices.Equal(results[1].ids, alone.ids) {
					t.Errorf("round %d: another seed gave the same tokens", round)
				}
			}
		})
	}
}

// A prompt that extends an earlier prompt and its output reuses their
// cached blocks: usage.prompt_tokens_details.cached_tokens says how many.
func TestSDKCompletionPrefixCached(t *testing.T) {
	ts := stories(t)
	c := ts.client()
	ids := ts.lm.Tokenizer.Encode("Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.", tokenizer.EncodeOptions{AddSpecial: true})
	toInt64 := func(ids []int) []int64 {
		out := make([]int64, len(ids))
		for i, id := range ids {
			out[i] = int64(id)
		}
		return out
	}
	p := completionParams("", 20)
	p.Prompt = openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: toInt64(ids)}
	p.Temperature = openai.Float(0)
	first, err := c.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true), option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("first request: %d cached tokens", first.Usage.PromptTokensDetails.CachedTokens)
	}
	out := tokenIDs(t, first.Choices[0].JSON.ExtraFields["token_ids"].Raw())
	next := append(append(slices.Clone(ids), out...), ids[1:6]...)
	p.Prompt = openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: toInt64(next)}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	_, _, _, usage := streamCompletion(t, c, p)
	// Every full block of the first prompt and output is cached (the last
	// output token was never fed, so its block may be incomplete).
	want := (len(ids) + len(out) - 1) / engine.BlockSize * engine.BlockSize
	if usage == nil || usage.PromptTokensDetails.CachedTokens != int64(want) || usage.PromptTokens != int64(len(next)) {
		t.Errorf("second request usage %+v, want %d cached of %d", usage, want, len(next))
	}
}

// Logprobs where the constraint rules out all but a few tokens: the top
// alternatives then include tokens of logprob -inf, which go out as vLLM's
// -9999 (JSON has no -inf); before, the response was a 200 with no body and
// the stream's events were empty lines. The legacy object lists its texts
// most likely first, as OpenAI and vLLM do.
func TestLogprobsOfRuledOutTokens(t *testing.T) {
	for name, ts := range map[string]*testServer{"stories": stories(t), "qwen3-tiny": qwen(t)} {
		for _, stream := range []bool{false, true} {
			body := map[string]any{"prompt": "Once upon", "max_tokens": 4, "logprobs": 5, "stream": stream, "temperature": 0,
				"structured_outputs": map[string]any{"choice": []string{"yes", "no"}}}
			code, raw := ts.post(t, "/v1/completions", body)
			events := bodies(t, raw, stream)
			floor := false
			for _, e := range events {
				var resp struct {
					Choices []struct {
						Text     string
						Logprobs struct {
							TokenLogprobs []float64          `json:"token_logprobs"`
							TopLogprobs   []ordered[float64] `json:"top_logprobs"`
						}
					}
				}
				if err := json.Unmarshal(e, &resp); code != 200 || err != nil {
					t.Fatalf("%s stream=%v: status %d, %v: %q", name, stream, code, err, e)
				}
				for _, ch := range resp.Choices {
					for i, o := range ch.Logprobs.TopLogprobs {
						top := o.values()
						if len(top) == 0 || !slices.IsSortedFunc(top, func(a, b float64) int { return cmp.Compare(b, a) }) {
							t.Errorf("%s stream=%v: top logprobs %v not most likely first", name, stream, top)
						}
						if top[0] != ch.Logprobs.TokenLogprobs[i] {
							t.Errorf("%s stream=%v: sampled %v, first of the top %v", name, stream, ch.Logprobs.TokenLogprobs[i], top[0])
						}
						floor = floor || top[len(top)-1] == -9999
					}
				}
			}
			if !floor {
				t.Errorf("%s stream=%v: no ruled-out alternative at -9999: %s", name, stream, raw)
			}
		}
	}
}

// ordered reads a JSON object's entries in the order it lists them.
type ordered[V any] []keyed[V]

type keyed[V any] struct {
	key string
	val V
}

func (o *ordered[V]) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		e := keyed[V]{key: k.(string)}
		if err := dec.Decode(&e.val); err != nil {
			return err
		}
		*o = append(*o, e)
	}
	return nil
}

func (o ordered[V]) values() []V {
	out := make([]V, len(o))
	for i, e := range o {
		out[i] = e.val
	}
	return out
}

// bodies is a response's JSON objects: the body, or a stream's events.
func bodies(t testing.TB, raw []byte, stream bool) [][]byte {
	if !stream {
		return [][]byte{raw}
	}
	var out [][]byte
	for _, e := range sseEvents(t, raw) {
		out = append(out, []byte(e))
	}
	return out
}

// The chat API's logprobs, under the same constraint.
func TestChatLogprobsOfRuledOutTokens(t *testing.T) {
	ts := qwen(t)
	for _, stream := range []bool{false, true} {
		code, raw := ts.post(t, "/v1/chat/completions", map[string]any{
			"messages": []map[string]any{{"role": "user", "content": "yes or no?"}}, "max_tokens": 4,
			"logprobs": true, "top_logprobs": 5, "stream": stream, "temperature": 0,
			"structured_outputs": map[string]any{"choice": []string{"yes", "no"}}})
		events := bodies(t, raw, stream)
		floor := false
		for _, e := range events {
			var resp struct {
				Choices []struct {
					Logprobs *struct {
						Content []struct {
							TopLogprobs []struct{ Logprob float64 } `json:"top_logprobs"`
						}
					}
				}
			}
			if err := json.Unmarshal(e, &resp); code != 200 || err != nil {
				t.Fatalf("stream=%v: status %d, %v: %q", stream, code, err, e)
			}
			for _, ch := range resp.Choices {
				if ch.Logprobs == nil {
					continue
				}
				for _, c := range ch.Logprobs.Content {
					floor = floor || len(c.TopLogprobs) == 5 && c.TopLogprobs[4].Logprob == -9999
				}
			}
		}
		if !floor {
			t.Errorf("stream=%v: no ruled-out alternative at -9999: %s", stream, raw)
		}
	}
}

// A value JSON cannot hold answers 500 in the API's error shape.
func TestWriteJSONUnencodable(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, map[string]any{"x": math.Inf(-1)})
	var e struct{ Error apiError }
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != 500 || err != nil || e.Error.Message == "" {
		t.Errorf("status %d, body %q", rec.Code, rec.Body)
	}
}

// echo: the prompt comes back before the text, and with logprobs its
// tokens' logprobs (the first null), as lm-evaluation-harness reads them
// for loglikelihood. Scoring a greedy continuation as part of the prompt
// (max_tokens 0) gives the logprobs its generation reported, and every
// scored token is the top alternative (is_greedy): the tier's results
// are the same bits whether a token is decoded or in a prompt's batch.
func TestCompletionEcho(t *testing.T) {
	ts := stories(t)
	gen := map[string]any{"prompt": storiesPrompt, "max_tokens": 12, "temperature": 0, "logprobs": 2}
	code, raw := ts.post(t, "/v1/completions", gen)
	var g echoResponse
	if err := json.Unmarshal(raw, &g); code != 200 || err != nil {
		t.Fatalf("status %d, %v: %s", code, err, raw)
	}
	cont := g.Choices[0].Logprobs

	for _, stream := range []bool{false, true} {
		code, raw = ts.post(t, "/v1/completions", map[string]any{"prompt": storiesPrompt + g.Choices[0].Text, "max_tokens": 0, "echo": true, "logprobs": 2, "stream": stream})
		e := readEcho(t, code, raw, stream)
		lp := e.Logprobs
		n := len(lp.Tokens)
		if e.Text != storiesPrompt+g.Choices[0].Text || e.Finish != "length" || n < 12 {
			t.Fatalf("stream=%v: text %q, finish %q, %d tokens", stream, e.Text, e.Finish, n)
		}
		if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil || len(lp.TokenLogprobs) != n || len(lp.TextOffset) != n {
			t.Errorf("stream=%v: first token %v %v, lengths %d %d", stream, lp.TokenLogprobs[0], lp.TopLogprobs[0], len(lp.TokenLogprobs), len(lp.TextOffset))
		}
		for i := range 12 {
			j := n - 12 + i
			got, want := lp.TokenLogprobs[j], cont.TokenLogprobs[i]
			if lp.Tokens[j] != cont.Tokens[i] || got == nil || *got != *want || lp.TopLogprobs[j][lp.Tokens[j]] != *want {
				t.Errorf("stream=%v: token %d %q %v, generated %q %v", stream, i, lp.Tokens[j], got, cont.Tokens[i], *want)
			}
			for _, v := range lp.TopLogprobs[j] {
				if got != nil && v > *got {
					t.Errorf("stream=%v: token %d is not the most likely (is_greedy)", stream, i)
				}
			}
		}
		for j := 1; j < n; j++ {
			if lp.TextOffset[j] != lp.TextOffset[j-1]+len(lp.Tokens[j-1]) {
				t.Errorf("stream=%v: text_offset %v", stream, lp.TextOffset)
				break
			}
		}
	}

	// echo without logprobs, and n > 1: each choice starts with the prompt.
	code, raw = ts.post(t, "/v1/completions", map[string]any{"prompt": []string{"Once", "Lily"}, "max_tokens": 3, "echo": true, "n": 2, "seed": 5})
	var r echoResponse
	if err := json.Unmarshal(raw, &r); code != 200 || err != nil || len(r.Choices) != 4 {
		t.Fatalf("status %d, %v: %s", code, err, raw)
	}
	for _, ch := range r.Choices {
		if want := []string{"Once", "Lily"}[ch.Index/2]; !strings.HasPrefix(ch.Text, want) || len(ch.Text) == len(want) || ch.Logprobs != nil {
			t.Errorf("choice %d: %q", ch.Index, ch.Text)
		}
	}
	if code, raw = ts.post(t, "/v1/completions", map[string]any{"prompt": "Once", "max_tokens": 0}); code != 400 || !strings.Contains(string(raw), "echo") {
		t.Errorf("max_tokens 0 without echo: %d %s", code, raw)
	}
}

type echoLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type echoChoice struct {
	Index    int
	Text     string
	Logprobs *echoLogprobs
	Finish   string `json:"finish_reason"`
}

type echoResponse struct{ Choices []echoChoice }

// readEcho is a one-choice completion's choice, its stream's events joined.
func readEcho(t *testing.T, code int, raw []byte, stream bool) echoChoice {
	t.Helper()
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	events := bodies(t, raw, stream)
	var out echoChoice
	out.Logprobs = &echoLogprobs{}
	for _, e := range events {
		var r echoResponse
		if err := json.Unmarshal(e, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%v: %s", err, e)
		}
		ch := r.Choices[0]
		out.Text += ch.Text
		out.Finish = ch.Finish
		if lp := ch.Logprobs; lp != nil {
			out.Logprobs.Tokens = append(out.Logprobs.Tokens, lp.Tokens...)
			out.Logprobs.TokenLogprobs = append(out.Logprobs.TokenLogprobs, lp.TokenLogprobs...)
			out.Logprobs.TopLogprobs = append(out.Logprobs.TopLogprobs, lp.TopLogprobs...)
			out.Logprobs.TextOffset = append(out.Logprobs.TextOffset, lp.TextOffset...)
		}
	}
	return out
}

// vLLM's prompt_logprobs: per prompt token after the first, its score
// keyed by token id (the prompt's token first, then the most likely), the
// same scores echo's logprobs report; on chat, at the response's top
// level. Not with stream, as vLLM.
func TestPromptLogprobs(t *testing.T) {
	ts := stories(t)
	code, raw := ts.post(t, "/v1/completions", map[string]any{"prompt": storiesPrompt, "max_tokens": 2, "echo": true, "logprobs": 1, "prompt_logprobs": 3, "return_token_ids": true})
	var r struct {
		Choices []struct {
			Logprobs       echoLogprobs
			PromptLogprobs []*ordered[scoreEntry] `json:"prompt_logprobs"`
			PromptTokenIDs []int                  `json:"prompt_token_ids"`
		}
	}
	if err := json.Unmarshal(raw, &r); code != 200 || err != nil || len(r.Choices) != 1 {
		t.Fatalf("status %d, %v: %s", code, err, raw)
	}
	ch := r.Choices[0]
	pl, lp := ch.PromptLogprobs, ch.Logprobs
	ids := ch.PromptTokenIDs
	if len(pl) != len(ids) || len(ids) < 2 || pl[0] != nil {
		t.Fatalf("%d prompt logprobs for %d tokens: %s", len(pl), len(ids), raw)
	}
	for i := 1; i < len(ids); i++ {
		e, first := pl[i].values(), (*pl[i])[0]
		if len(e) < 3 || len(e) > 4 || first.key != strconv.Itoa(ids[i]) || e[0].DecodedToken != lp.Tokens[i] || e[0].Logprob != float32(*lp.TokenLogprobs[i]) || e[0].Rank < 1 {
			t.Errorf("position %d: %+v, echo has %q %v", i, *pl[i], lp.Tokens[i], *lp.TokenLogprobs[i])
		}
		if len(lp.TopLogprobs[i]) > 2 { // logprobs 1: one alternative and the prompt's token
			t.Errorf("position %d: echo's alternatives %v", i, lp.TopLogprobs[i])
		}
		for j := 2; j < len(e); j++ {
			if e[j].Rank != e[j-1].Rank+1 || e[j].Logprob > e[j-1].Logprob {
				t.Errorf("position %d: alternatives %+v", i, e[1:])
			}
		}
	}

	q := qwen(t)
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	code, raw = q.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 2, "prompt_logprobs": 0, "return_token_ids": true})
	var c struct {
		PromptLogprobs []*ordered[scoreEntry] `json:"prompt_logprobs"`
		PromptTokenIDs []int                  `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal(raw, &c); code != 200 || err != nil {
		t.Fatalf("chat: status %d, %v: %s", code, err, raw)
	}
	if len(c.PromptLogprobs) != len(c.PromptTokenIDs) || len(c.PromptTokenIDs) < 2 || c.PromptLogprobs[0] != nil {
		t.Fatalf("chat: %d prompt logprobs for %d tokens", len(c.PromptLogprobs), len(c.PromptTokenIDs))
	}
	for i, e := range c.PromptLogprobs[1:] {
		if len(*e) != 1 || (*e)[0].key != strconv.Itoa(c.PromptTokenIDs[i+1]) {
			t.Errorf("chat: position %d: %+v", i+1, *e)
		}
	}

	for _, bad := range []map[string]any{
		{"prompt": "x", "prompt_logprobs": 21},
		{"prompt": "x", "prompt_logprobs": -1},
		{"prompt": "x", "prompt_logprobs": 1, "stream": true},
	} {
		if code, raw := ts.post(t, "/v1/completions", bad); code != 400 || !strings.Contains(string(raw), `"param":"prompt_logprobs"`) {
			t.Errorf("%v: %d %s", bad, code, raw)
		}
	}
	// 0 with stream passes, as in vLLM.
	if code, raw := ts.post(t, "/v1/completions", map[string]any{"prompt": "x", "max_tokens": 1, "prompt_logprobs": 0, "stream": true}); code != 200 {
		t.Errorf("prompt_logprobs 0 with stream: %d %s", code, raw)
	}
}

type scoreEntry struct {
	Logprob      float32
	Rank         int
	DecodedToken string `json:"decoded_token"`
}

// vLLM's include_stop_str_in_output keeps the matched stop string, in a
// response and in a stream; truncate_prompt_tokens keeps a prompt's last
// k tokens on completions, chat and embeddings (the same output as those
// k tokens sent alone).
func TestStopStringKeptAndPromptTruncated(t *testing.T) {
	ts := stories(t)
	for _, stream := range []bool{false, true} {
		for keep, want := range map[bool]string{false: ", there was a ", true: ", there was a little"} {
			code, raw := ts.post(t, "/v1/completions", map[string]any{"prompt": storiesPrompt, "max_tokens": 20, "temperature": 0,
				"stop": []string{"little"}, "include_stop_str_in_output": keep, "stream": stream})
			if e := readEcho(t, code, raw, stream); e.Text != want || e.Finish != "stop" {
				t.Errorf("stream=%v keep=%v: %q %q, want %q", stream, keep, e.Text, e.Finish, want)
			}
		}
	}

	long := []int{1, 403, 407, 261, 378, 432, 383, 286, 261}
	text := func(body map[string]any) (string, int) {
		t.Helper()
		code, raw := ts.post(t, "/v1/completions", body)
		var r completionResponse
		if err := json.Unmarshal(raw, &r); code != 200 || err != nil {
			t.Fatalf("%v: %d %s", body, code, raw)
		}
		return r.Choices[0].Text, r.Usage.PromptTokens
	}
	got, n := text(map[string]any{"prompt": long, "truncate_prompt_tokens": 4, "max_tokens": 8, "temperature": 0})
	want, _ := text(map[string]any{"prompt": long[len(long)-4:], "max_tokens": 8, "temperature": 0})
	if n != 4 || got != want {
		t.Errorf("completions: %d prompt tokens, %q; the last four alone %q", n, got, want)
	}
	if got, n = text(map[string]any{"prompt": long, "truncate_prompt_tokens": -1, "max_tokens": 8, "temperature": 0}); n != len(long) {
		t.Errorf("truncate_prompt_tokens -1: %d prompt tokens", n)
	}

	vec := func(body map[string]any) []float64 {
		t.Helper()
		code, raw := ts.post(t, "/v1/embeddings", body)
		var r struct {
			Data []struct{ Embedding []float64 }
		}
		if err := json.Unmarshal(raw, &r); code != 200 || err != nil {
			t.Fatalf("%v: %d %s", body, code, raw)
		}
		return r.Data[0].Embedding
	}
	if a, b := vec(map[string]any{"input": long, "truncate_prompt_tokens": 3}), vec(map[string]any{"input": long[len(long)-3:]}); !slices.Equal(a, b) {
		t.Errorf("embeddings: truncated input's vector differs from the last three tokens'")
	}

	q := qwen(t)
	code, raw := q.post(t, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hello there"}},
		"max_tokens": 2, "truncate_prompt_tokens": 5})
	var c struct{ Usage usage }
	if err := json.Unmarshal(raw, &c); code != 200 || err != nil || c.Usage.PromptTokens != 5 {
		t.Errorf("chat: %d %v %s", code, err, raw)
	}

	for _, k := range []int{0, -2, 1 << 20} {
		for _, path := range []string{"/v1/completions", "/v1/embeddings"} {
			body := map[string]any{"prompt": "x", "input": "x", "truncate_prompt_tokens": k}
			if code, raw := ts.post(t, path, body); code != 400 || !strings.Contains(string(raw), `"param":"truncate_prompt_tokens"`) {
				t.Errorf("%s truncate_prompt_tokens %d: %d %s", path, k, code, raw)
			}
		}
	}
}

// The official Go client reads an echoed, scored prompt (max_tokens 0
// with echo and logprobs): the text, the usage and the token logprobs,
// the first token's null reading as 0. Its typed top_logprobs cannot
// hold that first null (OpenAI's and vLLM's wire format, which the
// Python client takes), so they stay in the raw JSON.
func TestSDKCompletionEchoScores(t *testing.T) {
	ts := stories(t)
	p := completionParams(storiesPrompt, 0)
	p.Echo, p.Logprobs, p.Temperature = openai.Bool(true), openai.Int(1), openai.Float(0)
	c := ts.client()
	resp, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	lp := ch.Logprobs
	if ch.Text != storiesPrompt || ch.FinishReason != "length" || resp.Usage.CompletionTokens != 0 ||
		len(lp.Tokens) != int(resp.Usage.PromptTokens) || len(lp.TokenLogprobs) != len(lp.Tokens) {
		t.Fatalf("echo: %s", resp.RawJSON())
	}
	for i := 1; i < len(lp.Tokens); i++ {
		if lp.TokenLogprobs[i] >= 0 || lp.TokenLogprobs[i] < -20 {
			t.Errorf("token %d %q: logprob %v", i, lp.Tokens[i], lp.TokenLogprobs[i])
		}
	}
	var top []map[string]float64
	if err := json.Unmarshal([]byte(lp.JSON.TopLogprobs.Raw()), &top); err != nil || len(top) != len(lp.Tokens) || top[0] != nil || len(top[1]) == 0 {
		t.Errorf("raw top_logprobs %s: %v", lp.JSON.TopLogprobs.Raw(), err)
	}
}
