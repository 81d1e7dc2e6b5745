package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// checkResponseShape is checkShape for a Response, less access_programs:
// the SDK marks that OpenAI-only field required, and this server has no
// such programs to name.
func checkResponseShape(t testing.TB, what string, r *responses.Response) {
	t.Helper()
	for _, p := range shapeProblems(reflectValue(r), what) {
		if !strings.Contains(p, ".access_programs") {
			t.Errorf("%s", p)
		}
	}
}

// responsesText is what a response said: its reasoning and its text.
func responsesText(r *responses.Response) (reasoning, text string) {
	for _, it := range r.Output {
		switch it.Type {
		case "reasoning":
			for _, c := range it.Content {
				reasoning += c.Text
			}
		case "message":
			for _, c := range it.Content {
				text += c.Text
			}
		}
	}
	return reasoning, text
}

// Greedy Responses, streamed and not, say what chat completions says for
// the same conversation, on the Spark twin (with its reasoning split;
// the Qwen3 twin has no chat template).
func TestSDKResponsesMatchChat(t *testing.T) {
	// The Qwen3 twin's folder has no chat template: qwen serves it with
	// Qwen3-0.6B's.
	for name, ts := range map[string]*testServer{"spark2_5-tiny": start(t, Config{}, sparkHF...), "qwen3-tiny": qwen(t)} {
		c := ts.client()
		chatResp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:       "test-model",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello there")},
			MaxTokens:   openai.Int(12),
			Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatal(err)
		}
		wantText, wantReasoning := chatResp.Choices[0].Message.Content, reasoningOf(t, chatResp.Choices[0].Message)
		p := responses.ResponseNewParams{
			Model:           "test-model",
			Instructions:    openai.String("Be brief."),
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello there")},
			MaxOutputTokens: openai.Int(12),
			Temperature:     openai.Float(0),
		}
		resp, err := c.Responses.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		checkResponseShape(t, "response", resp)
		reasoning, text := responsesText(resp)
		if text != wantText || reasoning != wantReasoning || resp.OutputText() != wantText {
			t.Errorf("%s: responses said %q / %q, chat %q / %q", name, reasoning, text, wantReasoning, wantText)
		}
		if resp.Usage.InputTokens != chatResp.Usage.PromptTokens || resp.Usage.OutputTokens != chatResp.Usage.CompletionTokens {
			t.Errorf("%s: usage %+v, chat %+v", name, resp.Usage, chatResp.Usage)
		}
		if want := string(chatResp.Choices[0].FinishReason); (want == "length") != (resp.Status == "incomplete") {
			t.Errorf("%s: status %s, chat finished with %s", name, resp.Status, want)
		}

		st := c.Responses.NewStreaming(context.Background(), p)
		var deltas string
		var final responses.Response
		for st.Next() {
			ev := st.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas += ev.Delta
			case "response.completed", "response.incomplete":
				final = ev.Response
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		checkResponseShape(t, "streamed response", &final)
		sr, stext := responsesText(&final)
		if deltas != wantText || stext != wantText || sr != wantReasoning {
			t.Errorf("%s: streamed %q (deltas %q) / %q, want %q / %q", name, stext, deltas, sr, wantText, wantReasoning)
		}
	}
}

var weatherFn = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name:        "get_weather",
	Description: openai.String("Get the weather forecast for a city"),
	Strict:      openai.Bool(false),
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
		"required":   []string{"city"},
	},
}}

// A function tool end to end: the (scripted) model calls it, the client
// sends the call and its output back, and the second turn's prompt is
// the one chat completions renders for the same conversation.
func TestSDKResponsesToolRoundTrip(t *testing.T) {
	ts := scriptedSpark(t, "The user wants weather.</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>")
	c := ts.client()
	p := responses.ResponseNewParams{
		Model: "test-model",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Weather in Paris for 3 days?", responses.EasyInputMessageRoleUser),
		}},
		Tools:           []responses.ToolUnionParam{weatherFn},
		MaxOutputTokens: openai.Int(200),
	}
	for _, stream := range []bool{false, true} {
		var resp *responses.Response
		if stream {
			st := c.Responses.NewStreaming(context.Background(), p)
			for st.Next() {
				if ev := st.Current(); ev.Type == "response.completed" {
					resp = &ev.Response
				}
			}
			if err := st.Err(); err != nil || resp == nil {
				t.Fatalf("stream: %v", err)
			}
		} else {
			var err error
			if resp, err = c.Responses.New(context.Background(), p); err != nil {
				t.Fatal(err)
			}
		}
		checkResponseShape(t, "response", resp)
		reasoning, text := responsesText(resp)
		var calls []responses.ResponseOutputItemUnion
		for _, it := range resp.Output {
			if it.Type == "function_call" {
				calls = append(calls, it)
			}
		}
		if reasoning != "The user wants weather." || text != "Let me check." || len(calls) != 1 {
			t.Fatalf("stream=%v: %s", stream, resp.RawJSON())
		}
		if call := calls[0]; call.Name != "get_weather" || call.Arguments.OfString != `{"city":"Paris","days":3}` || call.CallID == "" || !strings.HasPrefix(call.ID, "fc_") {
			t.Errorf("stream=%v: call %s", stream, call.RawJSON())
		}
	}
	resp, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseOutputItemUnion
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			call = it
		}
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"forecast": ["sun"]}`)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	p.Input.OfInputItemList = append(p.Input.OfInputItemList,
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name), out)
	second, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// The same conversation as chat messages counts the same prompt tokens.
	var args map[string]any
	json.Unmarshal([]byte(call.Arguments.OfString), &args)
	code, body := ts.post(t, "/tokenize", map[string]any{
		"add_generation_prompt": true,
		"tools":                 []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Get the weather forecast for a city", "parameters": weatherFn.OfFunction.Parameters}}},
		"messages": []any{
			map[string]any{"role": "user", "content": "Weather in Paris for 3 days?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": call.CallID, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": call.Arguments.OfString}}}},
			map[string]any{"role": "tool", "tool_call_id": call.CallID, "content": `{"forecast": ["sun"]}`},
		},
	})
	var tok tokenizeResponse
	json.Unmarshal(body, &tok)
	if code != 200 || int64(tok.Count) != second.Usage.InputTokens {
		t.Errorf("second turn: %d input tokens, chat renders %d (%d %s)", second.Usage.InputTokens, tok.Count, code, body)
	}
	prompt := ts.lm.Tokenizer.Decode(tok.Tokens)
	if !strings.Contains(prompt, `<tool_response>{"forecast": ["sun"]}</tool_response>`) || !strings.Contains(prompt, "<arg_value>Paris</arg_value>") {
		t.Errorf("chat prompt:\n%s", prompt)
	}
}

// sseNamed reads a raw SSE body as (event name, data object) pairs.
func sseNamed(t testing.TB, body []byte) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		} else if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("event %s: data %q is not a JSON object", name, d)
			}
			names, data = append(names, name), append(data, m)
			name = ""
		}
	}
	return names, data
}

// The raw Responses stream: named events in the documented order, each
// data's type equal to its event name, sequence numbers counting from 0,
// and item events pointing at the item that output_item.added opened.
func TestResponsesStreamEvents(t *testing.T) {
	ts := scriptedSpark(t, "Hmm.</think>Sure.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>")
	tool := map[string]any{"type": "function", "name": "get_weather", "parameters": map[string]any{"type": "object"}}
	code, body := ts.post(t, "/v1/responses", map[string]any{"input": "Weather?", "tools": []any{tool}, "stream": true, "max_output_tokens": 100})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	names, data := sseNamed(t, body)
	var kinds []string
	for i, n := range names {
		if data[i]["type"] != n || data[i]["sequence_number"] != float64(i) {
			t.Errorf("event %d %s: %v", i, n, data[i])
		}
		switch n {
		case "response.output_text.delta", "response.reasoning_text.delta", "response.function_call_arguments.delta":
			if len(kinds) == 0 || kinds[len(kinds)-1] != n {
				kinds = append(kinds, n)
			}
		default:
			kinds = append(kinds, n)
		}
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("events (runs of deltas merged):\n%s\nwant\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	items := map[string]float64{}
	for i, n := range names {
		d := data[i]
		switch {
		case n == "response.created" || n == "response.in_progress":
			if r := d["response"].(map[string]any); r["status"] != "in_progress" || r["object"] != "response" {
				t.Errorf("%s: %v", n, r)
			}
		case n == "response.output_item.added":
			it := d["item"].(map[string]any)
			items[it["id"].(string)] = d["output_index"].(float64)
			if it["status"] != "in_progress" {
				t.Errorf("%s: %v", n, d)
			}
		case n == "response.completed":
			r := d["response"].(map[string]any)
			if r["status"] != "completed" || len(r["output"].([]any)) != 3 || r["usage"] == nil {
				t.Errorf("%s: %v", n, r)
			}
		case n != "response.output_item.done":
			id, _ := d["item_id"].(string)
			if idx, ok := items[id]; !ok || idx != d["output_index"] {
				t.Errorf("%s points at no open item: %v", n, d)
			}
		}
	}
	last := data[len(data)-1]["response"].(map[string]any)["output"].([]any)
	if c := last[2].(map[string]any); c["type"] != "function_call" || c["arguments"] != `{"city":"Oslo"}` || c["name"] != "get_weather" {
		t.Errorf("call item %v", c)
	}
}

// Every invalid Responses field gets a 400 in OpenAI's shape naming it.
func TestInvalidResponsesFields(t *testing.T) {
	ts := spark(t)
	tool := map[string]any{"type": "function", "name": "f", "parameters": map[string]any{"type": "object"}}
	with := func(kv ...any) map[string]any {
		b := map[string]any{"input": "hi"}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{}, "input"},
		{with("input", 5), "input"},
		{with("input", []any{}), "input"},
		{with("input", []any{"hi"}), "input[0]"},
		{with("input", []any{map[string]any{"role": "wizard", "content": "x"}}), "input[0].role"},
		{with("input", []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "http://x"}}}}), "input[0].content[0].type"},
		{with("input", []any{map[string]any{"type": "function_call_output", "output": "x"}}), "input[0].call_id"},
		{with("input", []any{map[string]any{"type": "function_call", "name": "f"}}), "input[0]"},
		{with("input", []any{map[string]any{"type": "web_search_call"}}), "input[0].type"},
		{with("input", []any{map[string]any{"type": "item_reference", "id": "x"}}), "input[0].type"},
		{with("previous_response_id", "resp_1"), "previous_response_id"},
		{with("conversation", "conv_1"), "conversation"},
		{with("background", true), "background"},
		{with("tools", []any{map[string]any{"type": "web_search"}}), "tools[0].type"},
		{with("tools", []any{map[string]any{"type": "function"}}), "tools[0].name"},
		{with("tools", "f"), "tools"},
		{with("tool_choice", "sometimes", "tools", []any{tool}), "tool_choice"},
		{with("tool_choice", "required"), "tool_choice"},
		{with("tool_choice", map[string]any{"type": "function", "name": "g"}, "tools", []any{tool}), "tool_choice"},
		{with("tool_choice", map[string]any{"type": "file_search"}, "tools", []any{tool}), "tool_choice"},
		{with("text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "x"}}), "text.format.schema"},
		{with("text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{"type": "array", "contains": map[string]any{"type": "string"}}}}), "text.format.schema"},
		{with("text", map[string]any{"format": map[string]any{"type": "yaml"}}), "text.format"},
		{with("reasoning", map[string]any{"effort": "extreme"}), "reasoning.effort"},
		{with("max_output_tokens", 0), "max_output_tokens"},
		{with("max_output_tokens", 1<<30), "max_output_tokens"},
		{with("max_output_tokens", "x"), "max_output_tokens"},
		{with("temperature", -1), "temperature"},
		{with("top_p", 0), "top_p"},
		{with("seed", "x"), "seed"},
		{with("parallel_tool_calls", "yes"), "parallel_tool_calls"},
		{with("stream", "yes"), "stream"},
	}
	for _, c := range cases {
		code, body := ts.post(t, "/v1/responses", c.body)
		e := errorBody(t, body)
		if code != 400 || e.Param != c.param || e.Type != "invalid_request_error" {
			t.Errorf("%v: status %d, param %v (want 400 naming %s): %s", c.body, code, e.Param, c.param, body)
		}
	}
	code, body := ts.post(t, "/v1/responses", with("model", "gpt-4o"))
	if e := errorBody(t, body); code != 404 || e.Param != "model" {
		t.Errorf("unknown model: %d %s", code, body)
	}
}

func FuzzResponsesRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 320}}, sparkHF...)
	h := cappedOutput(s.Handler())
	for _, seed := range []string{
		`{"input": "hi"}`,
		`{"input": "hi", "stream": true, "instructions": "be brief"}`,
		`{"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}, {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "r"}]}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}, {"type": "function_call_output", "call_id": "c", "output": "ok"}]}`,
		`{"input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}], "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": false}`,
		`{"input": "x", "text": {"format": {"type": "text"}}, "reasoning": {"effort": "none"}, "temperature": 0.5, "top_p": 0.9, "seed": 3}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzNamed(t, h, "/v1/responses", body)
	})
}

// include message.output_text.logprobs: the output text's tokens carry
// their logprobs (top_logprobs alternatives each), the ones the chat route
// reports for the same greedy answer; streamed, the deltas' logprobs join
// to the same list, which output_text.done repeats.
func TestResponsesLogprobs(t *testing.T) {
	ts := qwen(t)
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	code, raw := ts.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 6, "temperature": 0, "logprobs": true, "top_logprobs": 2})
	var c struct {
		Choices []struct{ Logprobs chatLogprobs }
	}
	if err := json.Unmarshal(raw, &c); code != 200 || err != nil {
		t.Fatalf("chat: %d %v %s", code, err, raw)
	}
	want := c.Choices[0].Logprobs.Content
	if len(want) != 6 || len(want[0].TopLogprobs) != 2 {
		t.Fatalf("chat logprobs %+v", want)
	}
	body := map[string]any{"input": msgs, "max_output_tokens": 6, "temperature": 0, "include": []string{"message.output_text.logprobs", "reasoning.encrypted_content"}, "top_logprobs": 2}
	code, raw = ts.post(t, "/v1/responses", body)
	var r struct {
		TopLogprobs int `json:"top_logprobs"`
		Output      []struct {
			Content []struct{ Logprobs []chatLogprob }
		}
	}
	if err := json.Unmarshal(raw, &r); code != 200 || err != nil || len(r.Output) != 1 || r.TopLogprobs != 2 {
		t.Fatalf("responses: %d %v %s", code, err, raw)
	}
	if got := r.Output[0].Content[0].Logprobs; !reflect.DeepEqual(got, want) {
		t.Errorf("responses logprobs\n got %+v\nwant %+v", got, want)
	}

	body["stream"] = true
	code, raw = ts.post(t, "/v1/responses", body)
	if code != 200 {
		t.Fatalf("stream: %d %s", code, raw)
	}
	var deltas, done []chatLogprob
	names, data := sseNamed(t, raw)
	for i, name := range names {
		var lp []chatLogprob
		b, _ := json.Marshal(data[i]["logprobs"])
		json.Unmarshal(b, &lp)
		switch name {
		case "response.output_text.delta":
			deltas = append(deltas, lp...)
		case "response.output_text.done":
			done = lp
		}
	}
	if !reflect.DeepEqual(deltas, want) || !reflect.DeepEqual(done, want) {
		t.Errorf("stream: deltas %+v\ndone %+v\nwant %+v", deltas, done, want)
	}

	delete(body, "stream")
	body["include"] = []string{}
	code, raw = ts.post(t, "/v1/responses", body)
	if code != 200 || !strings.Contains(string(raw), `"logprobs":[]`) {
		t.Errorf("without include: %d %s", code, raw)
	}
	body["top_logprobs"] = 21
	if code, raw = ts.post(t, "/v1/responses", body); code != 400 || !strings.Contains(string(raw), `"param":"top_logprobs"`) {
		t.Errorf("top_logprobs 21: %d %s", code, raw)
	}
}
