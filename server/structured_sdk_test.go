package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
)

var qwenHF = []string{"llm", "tiny", "hf", "qwen3-tiny", "bf16"}

// qwen serves the Qwen3 twin, whose folder has no chat template, with
// Qwen3-0.6B's template from the shared chat-template set (hermes tools).
func qwen(t testing.TB) *testServer {
	t.Helper()
	lm, err := load.Open(testdata.Path(t, qwenHF...))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(testdata.Path(t, "chat-templates", "Qwen-Qwen3-0.6B.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(lm.Model, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 64, KVCacheBytes: 64 << 20})
	t.Cleanup(func() { eng.Close(); lm.Close() })
	s := New(Config{ModelName: "test-model", Defaults: sample.Defaults(), ToolParser: "hermes"}, eng, lm.Tokenizer, tmpl)
	ts := &testServer{Server: httptest.NewServer(s.Handler()), srv: s, eng: eng, lm: lm}
	t.Cleanup(ts.Close)
	return ts
}

// schemaValidator compiles a schema with santhosh-tekuri/jsonschema, a
// validator independent of siskin's grammar code.
func schemaValidator(t testing.TB, schema any) *jsonschema.Schema {
	t.Helper()
	b, _ := json.Marshal(schema)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("file:///s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("file:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validJSON(s *jsonschema.Schema, text string) error {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

var boundedWeather = shared.FunctionParameters{
	"type": "object",
	"properties": map[string]any{
		"city": map[string]any{"type": "string", "minLength": 1, "maxLength": 8},
		"unit": map[string]any{"enum": []string{"c", "f"}},
		"days": map[string]any{"type": "integer", "minimum": 1, "maximum": 14},
	},
	"required": []string{"city", "days"},
}

var boundedSearch = shared.FunctionParameters{
	"type": "object",
	"properties": map[string]any{
		"query": map[string]any{"type": "string", "maxLength": 8},
		"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50},
	},
	"required": []string{"query"},
}

// tool_choice required and named on the random-weight twins: every
// answer, streamed or not, is one tool call whose arguments validate
// (the schemas are bounded, so every answer finishes within max_tokens).
// 100 requests per model (2 choices x 2 ways x 25 seeds), sent 8 at a
// time so that they share engine steps; -short sends 6 seeds (24).
func TestSDKStructuredToolCalls(t *testing.T) {
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: boundedWeather}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "search", Parameters: boundedSearch}),
	}
	vals := map[string]*jsonschema.Schema{"get_weather": schemaValidator(t, boundedWeather), "search": schemaValidator(t, boundedSearch)}
	seeds := 25
	if testing.Short() {
		seeds = 6
	}
	choices := map[string]openai.ChatCompletionToolChoiceOptionUnionParam{
		"required": {OfAuto: openai.String("required")},
		"named":    openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "search"}),
	}
	for _, model := range []struct {
		name string
		srv  func(testing.TB) *testServer
	}{{"spark", spark}, {"qwen3", qwen}} {
		c := model.srv(t).client()
		var jobs []toolCallJob
		for name, tc := range choices {
			for i := range seeds {
				for _, stream := range []bool{false, true} {
					p := chatParams(400, openai.UserMessage("Weather in Oslo?"))
					p.Tools, p.ToolChoice = tools, tc
					p.Temperature, p.Seed = openai.Float(1), openai.Int(int64(i))
					p.ParallelToolCalls = openai.Bool(false)
					jobs = append(jobs, toolCallJob{choice: name, stream: stream, p: p})
				}
			}
		}
		sem := make(chan struct{}, 8)
		var wg sync.WaitGroup
		for i := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func(j *toolCallJob) {
				defer func() { <-sem; wg.Done() }()
				j.run(c)
			}(&jobs[i])
		}
		wg.Wait()
		for _, j := range jobs {
			if err := j.check(vals); err != nil {
				t.Errorf("%s %s stream=%v: %v", model.name, j.choice, j.stream, err)
			}
		}
		t.Logf("%s: %d requests", model.name, len(jobs))
	}
}

// toolCallJob is one request of TestSDKStructuredToolCalls and its answer.
type toolCallJob struct {
	choice string
	stream bool
	p      openai.ChatCompletionNewParams
	finish string
	calls  []openai.ChatCompletionMessageToolCallUnion
	raw    string
	err    error
}

func (j *toolCallJob) run(c openai.Client) {
	if !j.stream {
		resp, err := c.Chat.Completions.New(context.Background(), j.p)
		if j.err = err; err == nil {
			j.finish, j.calls, j.raw = resp.Choices[0].FinishReason, resp.Choices[0].Message.ToolCalls, resp.RawJSON()
		}
		return
	}
	st := c.Chat.Completions.NewStreaming(context.Background(), j.p)
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if j.err = st.Err(); j.err == nil && len(acc.Choices) == 1 {
		j.finish, j.calls = acc.Choices[0].FinishReason, acc.Choices[0].Message.ToolCalls
		j.raw = acc.Choices[0].Message.RawJSON()
	}
}

// check is nil when the answer is one call of an offered tool (the named
// one for a named choice) with arguments its schema accepts.
func (j *toolCallJob) check(vals map[string]*jsonschema.Schema) error {
	if j.err != nil {
		return j.err
	}
	if j.finish != "tool_calls" || len(j.calls) != 1 {
		return fmt.Errorf("finish %q with %d calls: %s", j.finish, len(j.calls), j.raw)
	}
	fn := j.calls[0].Function
	v := vals[fn.Name]
	if v == nil || (j.choice == "named" && fn.Name != "search") {
		return fmt.Errorf("called %q", fn.Name)
	}
	if err := validJSON(v, fn.Arguments); err != nil {
		return fmt.Errorf("arguments %s: %v", fn.Arguments, err)
	}
	return nil
}

// response_format json_schema on chat (whole and streamed) and
// json_object on completions give JSON that validates when finished.
func TestSDKResponseFormat(t *testing.T) {
	ts := qwen(t)
	c := ts.client()
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "maxLength": 6},
			"age":  map[string]any{"type": "integer", "minimum": 0, "maximum": 120},
			"tags": map[string]any{"type": "array", "items": map[string]any{"enum": []string{"a", "b"}}, "maxItems": 3},
		},
		"required": []string{"name", "age"},
	}
	v := schemaValidator(t, schema)
	finished := 0
	for i := range 4 {
		p := chatParams(60, openai.UserMessage("A person, as JSON."))
		p.Temperature, p.Seed = openai.Float(1), openai.Int(int64(i))
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: schema, Strict: openai.Bool(true)},
		}}
		resp, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		st := streamChat(t, c, p)
		for _, got := range []openai.ChatCompletionChoice{resp.Choices[0], st.acc.Choices[0]} {
			if got.FinishReason == "length" {
				continue
			}
			finished++
			if err := validJSON(v, got.Message.Content); err != nil {
				t.Errorf("content %q: %v", got.Message.Content, err)
			}
		}
	}
	if finished == 0 {
		t.Error("no json_schema answer finished within 60 tokens")
	}
	resp, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model: "test-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("{")},
		MaxTokens: openai.Int(40), Seed: openai.Int(1),
	}, option.WithJSONSet("response_format", map[string]any{"type": "json_object"}))
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.FinishReason == "stop" && !json.Valid([]byte(ch.Text)) {
		t.Errorf("json_object text %q is not JSON", ch.Text)
	} else if ch.FinishReason == "stop" && !strings.HasPrefix(ch.Text, "{") {
		t.Errorf("json_object text %q is not an object", ch.Text)
	}
}

// text.format json_schema on /v1/responses takes the same path as chat's
// response_format: every completed answer validates.
func TestSDKResponsesTextFormat(t *testing.T) {
	ts := qwen(t)
	c := ts.client()
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string", "maxLength": 6}, "ok": map[string]any{"type": "boolean"}},
		"required":   []string{"name", "ok"},
	}
	v := schemaValidator(t, schema)
	completed := 0
	for i := range 4 {
		resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
			Model:           "test-model",
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("A name, as JSON.")},
			MaxOutputTokens: openai.Int(60),
			Temperature:     openai.Float(1),
			Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
				OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "named", Schema: schema, Strict: openai.Bool(true)},
			}},
		}, option.WithJSONSet("seed", i))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != "completed" {
			continue
		}
		completed++
		if err := validJSON(v, resp.OutputText()); err != nil {
			t.Errorf("output %q: %v", resp.OutputText(), err)
		}
	}
	if completed == 0 {
		t.Error("no text.format answer completed within 60 tokens")
	}
}

// gbnfYesNo is a GBNF grammar with a rule reference and a comment.
const gbnfYesNo = "root ::= answer # one of two\nanswer ::= \"yes\" \"!\" | \"no\" [.]\n"

// Unsupported keywords, invalid schemas, regexes and grammars are 400s
// naming the field (and the keyword in the message).
func TestStructuredErrors(t *testing.T) {
	ts := qwen(t)
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		body        map[string]any
		param, word string
	}{
		{map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "array", "contains": map[string]any{"type": "string"}}}}}, "response_format.json_schema.schema", "contains"},
		{map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "string", "pattern": "(?=a)b"}}}}, "response_format.json_schema.schema", "pattern"},
		{map[string]any{"structured_outputs": map[string]any{"regex": "a(b"}}, "structured_outputs.regex", "regular expression"},
		{map[string]any{"structured_outputs": map[string]any{"json": map[string]any{"$ref": "http://example.com/s.json"}}}, "structured_outputs.json", "$ref"},
		{map[string]any{"structured_outputs": map[string]any{"grammar": "start: \"a\""}}, "structured_outputs.grammar", "GBNF"},
		{map[string]any{"grammar": "root ::= item"}, "grammar", `rule "item" is used but not defined`},
		{map[string]any{"guided_grammar": "root ::= [z-a]"}, "guided_grammar", "reversed"},
		{map[string]any{"structured_outputs": map[string]any{"json": map[string]any{"type": "object"}, "whitespace_pattern": "[ ]+"}}, "structured_outputs.whitespace_pattern", "compactly"},
		{map[string]any{"guided_json": map[string]any{"type": "object"}, "guided_whitespace_pattern": "[ "}, "guided_whitespace_pattern", "regular expression"},
		{map[string]any{"json_schema": map[string]any{"type": "integer", "multipleOf": 7}}, "json_schema", "multipleOf"},
		{map[string]any{"structured_outputs": map[string]any{"choice": []string{"a"}}, "json_schema": map[string]any{"type": "string"}}, "json_schema", "only one"},
	} {
		body := map[string]any{"messages": msgs, "max_tokens": 4}
		for k, v := range c.body {
			body[k] = v
		}
		code, raw := ts.post(t, "/v1/chat/completions", body)
		var e struct {
			Error apiError `json:"error"`
		}
		json.Unmarshal(raw, &e)
		if code != 400 || e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.word) {
			t.Errorf("%v: status %d param %v: %s (want 400 naming %s and %q)", c.body, code, e.Error.Param, raw, c.param, c.word)
		}
	}
	// A choice list and a regex constrain the text exactly.
	for _, c := range []struct {
		so   map[string]any
		want func(string) bool
	}{
		{map[string]any{"choice": []string{"yes", "no"}}, func(s string) bool { return s == "yes" || s == "no" }},
		{map[string]any{"regex": "[0-9]{3}-[a-z]{2}"}, func(s string) bool { return len(s) == 6 && s[3] == '-' }},
		{map[string]any{"choice": []string{"a b"}, "whitespace_pattern": "[ \n]*", "disable_any_whitespace": true}, func(s string) bool { return s == "a b" }},
		{map[string]any{"grammar": gbnfYesNo}, func(s string) bool { return s == "yes!" || s == "no." }},
		{map[string]any{"llama": gbnfYesNo}, func(s string) bool { return s == "yes!" || s == "no." }},
	} {
		body := map[string]any{"messages": msgs, "max_tokens": 20, "structured_outputs": c.so}
		if g, ok := c.so["llama"]; ok {
			body = map[string]any{"messages": msgs, "max_tokens": 20, "grammar": g} // llama-server's field
		}
		code, raw := ts.post(t, "/v1/chat/completions", body)
		var r struct {
			Choices []struct {
				Message      struct{ Content string } `json:"message"`
				FinishReason string                   `json:"finish_reason"`
			} `json:"choices"`
		}
		json.Unmarshal(raw, &r)
		if code != 200 || len(r.Choices) != 1 || r.Choices[0].FinishReason != "stop" || !c.want(r.Choices[0].Message.Content) {
			t.Errorf("%v: %d %s", c.so, code, raw)
		}
	}
}
