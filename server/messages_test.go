package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
)

// anthropicClient is the official Anthropic Go SDK pointed at a test
// server, retries off.
func (ts *testServer) anthropicClient(opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(ts.URL + "/"),
		aoption.WithAPIKey("unused"),
		aoption.WithMaxRetries(0),
	}, opts...)...)
}

// messageText is what a message said: its thinking and its text.
func messageText(m *anthropic.Message) (thinking, text string) {
	for _, b := range m.Content {
		switch b.Type {
		case "thinking":
			thinking += b.Thinking
		case "text":
			text += b.Text
		}
	}
	return thinking, text
}

// streamMessage accumulates a streamed message as the SDK does.
func streamMessage(t testing.TB, c anthropic.Client, p anthropic.MessageNewParams) (anthropic.Message, []string) {
	t.Helper()
	st := c.Messages.NewStreaming(context.Background(), p)
	var acc anthropic.Message
	var types []string
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return acc, types
}

// Greedy Messages, streamed and not, say what chat completions says for
// the same conversation on the Spark twin (thinking = reasoning_content).
func TestSDKMessagesMatchChat(t *testing.T) {
	for name, ts := range map[string]*testServer{"spark2_5-tiny": spark(t), "qwen3-tiny": qwen(t)} {
		t.Run(name, func(t *testing.T) { messagesMatchChat(t, ts) })
	}
}

func messagesMatchChat(t *testing.T, ts *testServer) {
	oc := ts.client()
	chatResp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:       "test-model",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello there")},
		MaxTokens:   openai.Int(12),
		Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantText, wantThinking := chatResp.Choices[0].Message.Content, reasoningOf(t, chatResp.Choices[0].Message)
	c := ts.anthropicClient()
	p := anthropic.MessageNewParams{
		Model:       "test-model",
		MaxTokens:   12,
		System:      []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:    []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))},
		Temperature: anthropic.Float(0),
	}
	msg, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	thinking, text := messageText(msg)
	if text != wantText || thinking != wantThinking {
		t.Errorf("messages said %q / %q, chat %q / %q", thinking, text, wantThinking, wantText)
	}
	wantStop := map[openai.CompletionChoiceFinishReason]anthropic.StopReason{"stop": "end_turn", "length": "max_tokens"}[openai.CompletionChoiceFinishReason(chatResp.Choices[0].FinishReason)]
	if msg.StopReason != wantStop || msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens != chatResp.Usage.PromptTokens || msg.Usage.OutputTokens != chatResp.Usage.CompletionTokens || msg.Role != "assistant" || !strings.HasPrefix(msg.ID, "msg_") {
		t.Errorf("message %s; chat %s", msg.RawJSON(), chatResp.RawJSON())
	}
	// count_tokens reads what the message's input was.
	count, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model:    p.Model,
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System},
		Messages: p.Messages,
	})
	if err != nil || count.InputTokens != msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens {
		t.Errorf("count_tokens: %v %+v, the message read %d", err, count, msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens)
	}
	if code, raw := ts.post(t, "/v1/messages/count_tokens", map[string]any{"model": "test-model"}); code != 400 || !strings.Contains(string(raw), `"type":"error"`) || !strings.Contains(string(raw), "messages") {
		t.Errorf("count_tokens without messages: %d %s", code, raw)
	}
	acc, types := streamMessage(t, c, p)
	sthinking, stext := messageText(&acc)
	if stext != wantText || sthinking != wantThinking || acc.StopReason != wantStop {
		t.Errorf("streamed %q / %q (%s), want %q / %q", sthinking, stext, acc.StopReason, wantThinking, wantText)
	}
	if types[0] != "message_start" || types[len(types)-2] != "message_delta" || types[len(types)-1] != "message_stop" {
		t.Errorf("event types %v", types)
	}
}

// tool_use / tool_result round trip with the (scripted) Spark twin.
func TestSDKMessagesToolRoundTrip(t *testing.T) {
	ts := scriptedSpark(t, "The user wants weather.</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>")
	c := ts.anthropicClient()
	tool := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        "get_weather",
		Description: anthropic.String("Get the weather forecast for a city"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}, Required: []string{"city"}},
	}}
	p := anthropic.MessageNewParams{
		Model:     "test-model",
		MaxTokens: 200,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris for 3 days?"))},
		Tools:     []anthropic.ToolUnionParam{tool},
	}
	msg, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := streamMessage(t, c, p)
	for _, m := range []*anthropic.Message{msg, &acc} {
		thinking, text := messageText(m)
		last := m.Content[len(m.Content)-1]
		var args map[string]any
		json.Unmarshal(last.Input, &args)
		if thinking != "The user wants weather." || text != "Let me check." || m.StopReason != "tool_use" || last.Type != "tool_use" || last.Name != "get_weather" || args["city"] != "Paris" || args["days"] != float64(3) || !strings.HasPrefix(last.ID, "toolu_") {
			t.Errorf("message %s", m.RawJSON())
		}
	}
	use := msg.Content[len(msg.Content)-1]
	p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, `{"forecast": ["sun"]}`, false)))
	second, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// The same conversation as chat messages renders the same prompt.
	code, body := ts.post(t, "/tokenize", map[string]any{
		"add_generation_prompt": true,
		"tools":                 []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Get the weather forecast for a city", "parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}, "required": []string{"city"}}}}},
		"messages": []any{
			map[string]any{"role": "user", "content": "Weather in Paris for 3 days?"},
			map[string]any{"role": "assistant", "content": "Let me check.", "reasoning_content": "The user wants weather.", "tool_calls": []any{map[string]any{"id": use.ID, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": string(use.Input)}}}},
			map[string]any{"role": "tool", "tool_call_id": use.ID, "content": `{"forecast": ["sun"]}`},
		},
	})
	var tok tokenizeResponse
	json.Unmarshal(body, &tok)
	if got := second.Usage.InputTokens + second.Usage.CacheReadInputTokens; code != 200 || int64(tok.Count) != got {
		t.Errorf("second turn: %d input tokens, chat renders %d (%d %s)", got, tok.Count, code, body)
	}
	if prompt := ts.lm.Tokenizer.Decode(tok.Tokens); !strings.Contains(prompt, `<tool_response>{"forecast": ["sun"]}</tool_response>`) {
		t.Errorf("chat prompt:\n%s", prompt)
	}
}

// The raw Messages stream: Anthropic's event sequence with its fields.
func TestMessagesStreamEvents(t *testing.T) {
	ts := scriptedSpark(t, "Hmm.</think>Sure.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>")
	tool := map[string]any{"name": "get_weather", "input_schema": map[string]any{"type": "object"}}
	code, body := ts.post(t, "/v1/messages", map[string]any{"max_tokens": 100, "stream": true, "tools": []any{tool}, "messages": []any{map[string]any{"role": "user", "content": "Weather?"}}})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	names, data := sseNamed(t, body)
	var kinds []string
	for i, n := range names {
		if data[i]["type"] != n {
			t.Errorf("event %d %s: %v", i, n, data[i])
		}
		k := n
		if n == "content_block_delta" {
			k += "/" + data[i]["delta"].(map[string]any)["type"].(string)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != k || n != "content_block_delta" {
			kinds = append(kinds, k)
		}
	}
	want := []string{"message_start",
		"content_block_start", "content_block_delta/thinking_delta", "content_block_stop",
		"content_block_start", "content_block_delta/text_delta", "content_block_stop",
		"content_block_start", "content_block_delta/input_json_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("events (runs of deltas merged):\n%s\nwant\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	start := data[0]["message"].(map[string]any)
	if start["role"] != "assistant" || start["stop_reason"] != nil || len(start["content"].([]any)) != 0 || start["usage"] == nil {
		t.Errorf("message_start %v", start)
	}
	for i, n := range names {
		if strings.HasPrefix(n, "content_block") {
			if _, ok := data[i]["index"].(float64); !ok {
				t.Errorf("%s without index: %v", n, data[i])
			}
		}
	}
	md := data[len(data)-2]
	if d := md["delta"].(map[string]any); d["stop_reason"] != "tool_use" || md["usage"].(map[string]any)["output_tokens"] == nil {
		t.Errorf("message_delta %v", md)
	}
}

// Every invalid Messages field gets a 400 in Anthropic's shape whose
// message starts with the field's path; x-api-key and Bearer both
// authenticate.
func TestInvalidMessagesFields(t *testing.T) {
	ts := spark(t)
	user := []any{map[string]any{"role": "user", "content": "hi"}}
	with := func(kv ...any) map[string]any {
		b := map[string]any{"messages": user, "max_tokens": 4}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
				continue
			}
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		body  map[string]any
		field string
	}{
		{with("max_tokens", nil), "max_tokens"},
		{with("max_tokens", 0), "max_tokens"},
		{with("max_tokens", "x"), "max_tokens"},
		{with("max_tokens", 1<<30), "max_tokens"},
		{with("messages", nil), "messages"},
		{with("messages", []any{}), "messages"},
		{with("messages", []any{"hi"}), "messages.0"},
		{with("messages", []any{map[string]any{"role": "system", "content": "x"}}), "messages.0.role"},
		{with("messages", []any{map[string]any{"role": "user", "content": 5}}), "messages.0.content"},
		{with("messages", []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image"}}}}), "messages.0.content.0.type"},
		{with("messages", []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result"}}}}), "messages.0.content.0.tool_use_id"},
		{with("messages", []any{map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "x"}}}}), "messages.0.content.0"},
		{with("system", 5), "system"},
		{with("tools", []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}), "tools.0.type"},
		{with("tools", []any{map[string]any{"name": "f"}}), "tools.0.input_schema"},
		{with("tools", []any{map[string]any{"input_schema": map[string]any{}}}), "tools.0.name"},
		{with("tool_choice", map[string]any{"type": "sometimes"}), "tool_choice.type"},
		{with("tool_choice", map[string]any{"type": "tool"}), "tool_choice.name"},
		{with("tool_choice", map[string]any{"type": "any"}), "tool_choice"},
		{with("temperature", 1.5), "temperature"},
		{with("top_p", 0), "top_p"},
		{with("top_k", -2), "top_k"},
		{with("stop_sequences", "x"), "stop_sequences"},
		{with("thinking", map[string]any{"type": "maybe"}), "thinking.type"},
	}
	for _, c := range cases {
		code, body := ts.post(t, "/v1/messages", c.body)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(body, &e)
		if code != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, c.field+":") {
			t.Errorf("%v: status %d (want 400 naming %s): %s", c.body, code, c.field, body)
		}
	}

	keyed := start(t, Config{APIKey: "k"}, sparkHF...)
	for _, h := range []map[string]string{{"x-api-key": "k"}, {"Authorization": "Bearer k"}, {"x-api-key": "bad"}, {}} {
		raw, _ := json.Marshal(with())
		req, _ := http.NewRequest("POST", keyed.URL+"/v1/messages", strings.NewReader(string(raw)))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := 401
		if h["x-api-key"] == "k" || h["Authorization"] == "Bearer k" {
			want = 200
		}
		if resp.StatusCode != want {
			t.Errorf("headers %v: status %d, want %d", h, resp.StatusCode, want)
		}
	}
}

func FuzzMessagesRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 320}}, sparkHF...)
	h := cappedOutput(s.Handler())
	for _, seed := range []string{
		`{"max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`,
		`{"max_tokens": 4, "stream": true, "system": [{"type": "text", "text": "be brief"}], "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}`,
		`{"max_tokens": 4, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": ""}, {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}]}]}`,
		`{"max_tokens": 4, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "f", "disable_parallel_tool_use": true}, "stop_sequences": ["a"], "temperature": 0.5, "top_p": 0.9, "top_k": 5}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzNamed(t, h, "/v1/messages", body)
	})
}
