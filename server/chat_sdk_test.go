package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/tokenizer"
)

var sparkHF = []string{"llm", "tiny", "hf", "spark2_5-tiny", "bf16"}

// spark serves the tiny Spark-X2.5 twin from its Hugging Face folder,
// whose tokenizer_config.json carries the real Spark chat template.
func spark(t testing.TB) *testServer { return start(t, Config{}, sparkHF...) }

func chatParams(maxTokens int64, msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:               "test-model",
		Messages:            msgs,
		MaxCompletionTokens: openai.Int(maxTokens),
		Temperature:         openai.Float(0),
	}
}

// reasoningOf reads the reasoning_content extension of a message.
func reasoningOf(t testing.TB, m openai.ChatCompletionMessage) string {
	t.Helper()
	f, ok := m.JSON.ExtraFields["reasoning_content"]
	if !ok || f.Raw() == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
		t.Fatalf("reasoning_content %s", f.Raw())
	}
	return s
}

// chatStream is the joined result of a streamed chat completion.
type chatStream struct {
	acc       openai.ChatCompletionAccumulator
	reasoning map[int64]string
	usage     *openai.CompletionUsage
	chunks    int
}

// streamChat runs a streaming chat completion through the SDK, feeding
// every chunk to the SDK's own accumulator (which refuses chunks that
// are not consistent) and checking each chunk's shape.
func streamChat(t testing.TB, c openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) *chatStream {
	t.Helper()
	st := c.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	defer st.Close()
	out := &chatStream{reasoning: map[int64]string{}}
	finished := map[int64]bool{}
	for st.Next() {
		chunk := st.Current()
		out.chunks++
		checkShape(t, "chunk", chunk)
		if chunk.Object != "chat.completion.chunk" {
			t.Errorf("chunk object %q", chunk.Object)
		}
		if !out.acc.AddChunk(chunk) {
			t.Fatalf("the SDK's accumulator refused chunk %s", chunk.RawJSON())
		}
		if chunk.JSON.Usage.Valid() {
			u := chunk.Usage
			out.usage = &u
			if len(chunk.Choices) != 0 {
				t.Errorf("usage chunk with choices: %s", chunk.RawJSON())
			}
		}
		for _, ch := range chunk.Choices {
			if out.usage != nil || finished[ch.Index] {
				t.Errorf("chunk after the end of choice %d: %s", ch.Index, chunk.RawJSON())
			}
			if f, ok := ch.Delta.JSON.ExtraFields["reasoning_content"]; ok && f.Raw() != "null" {
				var s string
				json.Unmarshal([]byte(f.Raw()), &s)
				out.reasoning[ch.Index] += s
			}
			switch ch.FinishReason {
			case "":
			case "stop", "length", "tool_calls":
				finished[ch.Index] = true
			default:
				t.Errorf("finish_reason %q", ch.FinishReason)
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Chat on the Spark twin: the generation prompt opens <think>, so the
// output is reasoning_content; streamed and whole answers agree, and the
// SDK decodes both cleanly.
func TestSDKChatReasoning(t *testing.T) {
	ts := spark(t)
	c := ts.client()
	p := chatParams(24, openai.SystemMessage("Be brief."), openai.UserMessage("Tell me about cats."))
	resp, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "chat", resp)
	if resp.Object != "chat.completion" || len(resp.Choices) != 1 {
		t.Fatalf("response %s", resp.RawJSON())
	}
	msg := resp.Choices[0].Message
	reasoning := reasoningOf(t, msg)
	if reasoning == "" || msg.Role != "assistant" {
		t.Errorf("no reasoning_content: %s", resp.RawJSON())
	}
	if resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 24 {
		t.Errorf("finish %q usage %s", resp.Choices[0].FinishReason, resp.Usage.RawJSON())
	}

	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := streamChat(t, c, p)
	if st.reasoning[0] != reasoning || st.acc.Choices[0].Message.Content != msg.Content {
		t.Errorf("stream: reasoning %q content %q, want %q %q", st.reasoning[0], st.acc.Choices[0].Message.Content, reasoning, msg.Content)
	}
	if st.usage == nil || st.usage.PromptTokens != resp.Usage.PromptTokens || st.usage.CompletionTokens != 24 {
		t.Errorf("stream usage %+v, want prompt %d", st.usage, resp.Usage.PromptTokens)
	}

	// enable_thinking false closes the reasoning in the prompt: content only.
	resp, err = c.Chat.Completions.New(context.Background(), p, option.WithJSONDel("stream_options"),
		option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}))
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.Choices[0].Message; m.Content == "" || reasoningOf(t, m) != "" {
		t.Errorf("enable_thinking false: %s", resp.RawJSON())
	}
}

// n > 1 with a seed, and chat logprobs with top_logprobs.
func TestSDKChatNLogprobs(t *testing.T) {
	ts := spark(t)
	c := ts.client()
	p := chatParams(12, openai.UserMessage("Hi"))
	p.Temperature = openai.Float(1)
	p.Seed = openai.Int(5)
	p.N = openai.Int(3)
	p.Logprobs = openai.Bool(true)
	p.TopLogprobs = openai.Int(4)
	resp, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "chat", resp)
	if len(resp.Choices) != 3 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	seen := map[string]bool{}
	for i, ch := range resp.Choices {
		if ch.Index != int64(i) {
			t.Errorf("choice %d index %d", i, ch.Index)
		}
		lp := ch.Logprobs.Content
		if len(lp) != 12 {
			t.Fatalf("choice %d: %d logprobs, want 12", i, len(lp))
		}
		var text []byte
		for _, e := range lp {
			b := bytesToString(e.Bytes)
			// A token that is part of a UTF-8 character shows as U+FFFD;
			// its bytes are the truth.
			if len(e.TopLogprobs) != 4 || e.Logprob > 0 || utf8.Valid(b) && string(b) != e.Token {
				t.Errorf("logprob entry %s", e.RawJSON())
			}
			if !strings.HasPrefix(e.Token, "<|") { // special tokens are skipped in the text
				text = append(text, b...)
			}
		}
		// The tokens spell the whole output, reasoning included.
		want := strings.TrimSpace(string([]rune(string(text)))) // each stray byte becomes U+FFFD
		if got := reasoningOf(t, ch.Message) + ch.Message.Content; strings.TrimSpace(got) != want {
			t.Errorf("choice %d: logprob tokens %q, output %q", i, want, got)
		}
		seen[string(text)] = true
	}
	if len(seen) == 1 {
		t.Errorf("three equal choices")
	}
	if resp.Usage.CompletionTokens != 36 {
		t.Errorf("usage %s", resp.Usage.RawJSON())
	}
	st := streamChat(t, c, p)
	for i, ch := range resp.Choices {
		got := st.acc.Choices[i]
		if st.reasoning[int64(i)] != reasoningOf(t, ch.Message) || len(got.Logprobs.Content) != 12 {
			t.Errorf("streamed choice %d: %q, %d logprobs", i, st.reasoning[int64(i)], len(got.Logprobs.Content))
		}
		for j := range got.Logprobs.Content {
			if got.Logprobs.Content[j].Logprob != ch.Logprobs.Content[j].Logprob {
				t.Errorf("streamed choice %d logprob %d differs", i, j)
				break
			}
		}
	}
}

func bytesToString(b []int64) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = byte(v)
	}
	return out
}

// Stop strings in chat: cut from the content, finish_reason stop.
func TestSDKChatStop(t *testing.T) {
	ts := spark(t)
	c := ts.client()
	p := chatParams(40, openai.UserMessage("Write something."))
	noThink := option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false})
	full, err := c.Chat.Completions.New(context.Background(), p, noThink)
	if err != nil {
		t.Fatal(err)
	}
	text := full.Choices[0].Message.Content
	if len(text) < 8 {
		t.Fatalf("greedy content too short: %q", text)
	}
	stop := text[len(text)/2 : len(text)/2+3]
	want := text[:strings.Index(text, stop)]
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
	resp, err := c.Chat.Completions.New(context.Background(), p, noThink)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0]; got.Message.Content != strings.TrimSpace(want) && got.Message.Content != want || got.FinishReason != "stop" {
		t.Errorf("stop %q: content %q finish %q, want %q", stop, got.Message.Content, got.FinishReason, want)
	}
	st := streamChat(t, c, p, noThink)
	if got := st.acc.Choices[0]; got.Message.Content != resp.Choices[0].Message.Content || got.FinishReason != "stop" {
		t.Errorf("stream: content %q finish %q", got.Message.Content, got.FinishReason)
	}
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Get the weather forecast for a city"),
	Parameters: shared.FunctionParameters{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"days": map[string]any{"type": "integer"},
		},
		"required": []string{"city"},
	},
})

var currencyTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:       "convert_currency",
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "number"}}},
})

// scriptedSpark serves the Spark twin with its output fixed to text
// (then EOS) for greedy requests.
func scriptedSpark(t testing.TB, text string) *testServer {
	return startWith(t, setup{wrap: func(m model.Model, lm *load.Loaded) model.Model {
		ids := lm.Tokenizer.Encode(text, tokenizer.EncodeOptions{})
		if got := lm.Tokenizer.Decode(ids); got != text {
			t.Fatalf("script does not round-trip: %q", got)
		}
		return newScripted(m, ids, lm.Tokenizer.EOS())
	}}, sparkHF...)
}

// Tool calls end to end on the Spark twin: the declared tools reach the
// rendered prompt, and the model's output (scripted, since random weights
// never write a well-formed call) is split by the spark25 parser into
// reasoning, content and a call with typed arguments.
func TestSDKChatToolCallAuto(t *testing.T) {
	ts := scriptedSpark(t, "The user wants weather.</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>")
	c := ts.client()
	p := chatParams(200, openai.UserMessage("Weather in Paris for 3 days?"))
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool, currencyTool}
	resp, err := c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "chat", resp)
	var promptIDs []int
	json.Unmarshal([]byte(resp.JSON.ExtraFields["prompt_token_ids"].Raw()), &promptIDs)
	prompt := ts.lm.Tokenizer.Decode(promptIDs)
	if !strings.Contains(prompt, "<tools>") || !strings.Contains(prompt, `"name": "get_weather"`) || !strings.Contains(prompt, `"name": "convert_currency"`) {
		t.Errorf("the tools are not in the rendered prompt:\n%s", prompt)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != "Let me check." || reasoningOf(t, ch.Message) != "The user wants weather." {
		t.Errorf("response %s", resp.RawJSON())
	}
	if len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("%d tool calls: %s", len(ch.Message.ToolCalls), resp.RawJSON())
	}
	call := ch.Message.ToolCalls[0]
	if call.Type != "function" || call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"Paris","days":3}` || !strings.HasPrefix(call.ID, "chatcmpl-tool-") {
		t.Errorf("call %s", call.RawJSON())
	}

	st := streamChat(t, c, p)
	got := st.acc.Choices[0]
	if got.FinishReason != "tool_calls" || got.Message.Content != "Let me check." || st.reasoning[0] != "The user wants weather." || len(got.Message.ToolCalls) != 1 {
		t.Fatalf("stream: %+v reasoning %q", got, st.reasoning[0])
	}
	if sc := got.Message.ToolCalls[0]; sc.Function.Name != "get_weather" || sc.Function.Arguments != call.Function.Arguments || sc.ID == "" {
		t.Errorf("streamed call %+v", sc)
	}

	// The next turn sends the call and its result back: the template
	// renders them (arguments arrive as a JSON string and must reach it
	// as a mapping) and the answer is again a call.
	p.Messages = append(p.Messages, ch.Message.ToParam(), openai.ToolMessage(`{"forecast": ["sun"]}`, call.ID))
	resp, err = c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(resp.JSON.ExtraFields["prompt_token_ids"].Raw()), &promptIDs)
	prompt = ts.lm.Tokenizer.Decode(promptIDs)
	for _, want := range []string{"<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>", `<tool_response>{"forecast": ["sun"]}</tool_response>`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("second turn prompt lacks %q:\n%s", want, prompt)
		}
	}
	if resp.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("second turn: %s", resp.RawJSON())
	}

	// tool_choice none: no tools in the prompt and no parsing; the call
	// syntax stays text.
	p.Messages = p.Messages[:1]
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	resp, err = c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 0 || !strings.Contains(ch.Message.Content, "<tool_call>get_weather") {
		t.Errorf("tool_choice none: %s", resp.RawJSON())
	}
}

// tool_choice required and a named function force the call: the server
// closes the open reasoning and opens the call in the prompt, so the
// parser sees a call from the first generated token.
func TestSDKChatToolChoiceForced(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		choice       openai.ChatCompletionToolChoiceOptionUnionParam
		wantName     string
		wantArgs     string
	}{
		{"required", "convert_currency<arg_key>amount</arg_key><arg_value>12.5</arg_value></tool_call>",
			openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}, "convert_currency", `{"amount":12.5}`},
		{"named", "<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>",
			openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}), "get_weather", `{"city":"Oslo"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := scriptedSpark(t, tc.script)
			c := ts.client()
			p := chatParams(100, openai.UserMessage("Go."))
			p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool, currencyTool}
			p.ToolChoice = tc.choice
			resp, err := c.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkShape(t, "chat", resp)
			ch := resp.Choices[0]
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" || reasoningOf(t, ch.Message) != "" {
				t.Fatalf("response %s", resp.RawJSON())
			}
			if call := ch.Message.ToolCalls[0]; call.Function.Name != tc.wantName || call.Function.Arguments != tc.wantArgs {
				t.Errorf("call %s", call.RawJSON())
			}
			st := streamChat(t, c, p)
			if got := st.acc.Choices[0]; len(got.Message.ToolCalls) != 1 || got.Message.ToolCalls[0].Function.Arguments != tc.wantArgs || got.FinishReason != "tool_calls" {
				t.Errorf("stream %+v", got)
			}
		})
	}
}

// The real random-weight model with a forced call: the request goes
// through (template with tools, forced prefix, parser) and returns a
// well-formed answer, whatever the model writes after the forced name.
func TestSDKChatToolChoiceRealModel(t *testing.T) {
	ts := spark(t)
	c := ts.client()
	p := chatParams(16, openai.UserMessage("Weather?"))
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	resp, err := c.Chat.Completions.New(context.Background(), p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, "chat", resp)
	var promptIDs []int
	json.Unmarshal([]byte(resp.JSON.ExtraFields["prompt_token_ids"].Raw()), &promptIDs)
	if prompt := ts.lm.Tokenizer.Decode(promptIDs); !strings.HasSuffix(prompt, "<|Bot|><think></think><tool_call>get_weather") {
		t.Errorf("prompt does not end with the forced call: %q", prompt[max(0, len(prompt)-60):])
	}
	if f := resp.Choices[0].FinishReason; !slices.Contains([]string{"stop", "length", "tool_calls"}, f) {
		t.Errorf("finish_reason %q", f)
	}
	st := streamChat(t, c, p)
	if st.acc.Choices[0].FinishReason != resp.Choices[0].FinishReason {
		t.Errorf("stream finish %q, want %q", st.acc.Choices[0].FinishReason, resp.Choices[0].FinishReason)
	}
}

// The second turn of a conversation finds the shared history in the
// prefix cache and says so in usage.prompt_tokens_details.cached_tokens.
func TestSDKChatMultiTurnCached(t *testing.T) {
	ts := spark(t)
	c := ts.client()
	p := chatParams(16, openai.SystemMessage("You tell short stories."), openai.UserMessage("Tell me a story about a cat."))
	noThink := option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false})
	first, err := c.Chat.Completions.New(context.Background(), p, noThink)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.PromptTokens < 32 {
		t.Fatalf("first prompt has %d tokens: too short to fill a cache block", first.Usage.PromptTokens)
	}
	p.Messages = append(p.Messages, first.Choices[0].Message.ToParam(), openai.UserMessage("And a dog?"))
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := streamChat(t, c, p, noThink)
	if st.usage == nil {
		t.Fatal("no usage chunk")
	}
	cached := st.usage.PromptTokensDetails.CachedTokens
	if cached <= 0 || cached >= st.usage.PromptTokens || cached%16 != 0 {
		t.Errorf("second turn: %d cached of %d prompt tokens (first turn had %d)", cached, st.usage.PromptTokens, first.Usage.PromptTokens)
	}
	t.Logf("second turn: %d of %d prompt tokens cached", cached, st.usage.PromptTokens)
}

// The golden Spark conversation (system prompt, tools, an assistant turn
// with reasoning and two calls, tool results, a follow-up) sent as a
// chat request renders to the reference prompt ids, and greedy output
// through the server is the reference implementation's.
func TestChatGoldenConversation(t *testing.T) {
	ts := spark(t)
	dir := testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "golden")
	var conv struct {
		Tools    json.RawMessage `json:"tools"`
		Messages json.RawMessage `json:"messages"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "chat_conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &conv)
	var ref struct {
		PromptIDs    []int `json:"prompt_ids"`
		GeneratedIDs []int `json:"generated_ids"`
	}
	raw, err = os.ReadFile(filepath.Join(dir, "chat_verbatim.ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &ref)
	wantPrompt, wantGen := ref.PromptIDs, ref.GeneratedIDs

	code, body := ts.post(t, "/v1/chat/completions", map[string]any{
		"messages": conv.Messages, "tools": conv.Tools, "max_tokens": len(wantGen), "temperature": 0,
		"ignore_eos": true, "return_token_ids": true,
	})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var resp chatResponse
	json.Unmarshal(body, &resp)
	if !slices.Equal(resp.PromptTokenIDs, wantPrompt) {
		t.Errorf("prompt: %d ids, want the reference's %d", len(resp.PromptTokenIDs), len(wantPrompt))
	}
	if got := resp.Choices[0].TokenIDs; !slices.Equal(got, wantGen) {
		t.Errorf("greedy output\n got %v\nwant %v", got, wantGen)
	}
}

// Text content parts are joined with newlines into one string before the
// template sees them (vLLM's "string" content format).
func TestContentPartsJoined(t *testing.T) {
	ts := spark(t)
	usageOf := func(content any) int {
		code, body := ts.post(t, "/v1/chat/completions", map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": content}}, "max_tokens": 1, "temperature": 0,
		})
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		var r chatResponse
		json.Unmarshal(body, &r)
		return r.Usage.PromptTokens
	}
	parts := []any{map[string]any{"type": "text", "text": "Hello"}, map[string]any{"type": "text", "text": "world"}}
	if a, b := usageOf(parts), usageOf("Hello\nworld"); a != b {
		t.Errorf("content parts give %d prompt tokens, the joined string %d", a, b)
	}
}
