package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// With tool_choice "auto" the tool-call grammar switches on only at the
// trigger: the scripted output's free text and reasoning (which mentions
// <tool_call> itself) come through untouched, and the call that follows,
// whose scripted days value 99 breaks the schema's maximum of 14, comes
// out with arguments that validate (the grammar masked the second 9).
func TestLazyToolGrammarAuto(t *testing.T) {
	const reasoning = "Use <tool_call> syntax."
	ts := scriptedSpark(t, reasoning+"</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Oslo</arg_value><arg_key>days</arg_key><arg_value>99</arg_value></tool_call>")
	c := ts.client()
	tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: boundedWeather})
	v := schemaValidator(t, boundedWeather)
	p := chatParams(400, openai.UserMessage("Weather in Oslo?"))
	p.Tools = []openai.ChatCompletionToolUnionParam{tool}
	p.ParallelToolCalls = openai.Bool(false)
	resp, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := streamChat(t, c, p)
	for _, got := range []struct {
		how       string
		ch        openai.ChatCompletionChoice
		reasoning string
	}{{"whole", resp.Choices[0], reasoningOf(t, resp.Choices[0].Message)}, {"stream", st.acc.Choices[0], st.reasoning[0]}} {
		ch := got.ch
		if got.reasoning != reasoning || ch.Message.Content != "Let me check." {
			t.Errorf("%s: free text changed: reasoning %q content %q", got.how, got.reasoning, ch.Message.Content)
		}
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("%s: finish %q, %d calls: %s", got.how, ch.FinishReason, len(ch.Message.ToolCalls), resp.RawJSON())
		}
		fn := ch.Message.ToolCalls[0].Function
		if err := validJSON(v, fn.Arguments); err != nil || fn.Name != "get_weather" || !strings.Contains(fn.Arguments, `"city":"Oslo"`) {
			t.Errorf("%s: call %s(%s): %v", got.how, fn.Name, fn.Arguments, err)
		}
	}

	// The same output with tool_choice "none" is not constrained: the
	// out-of-range value comes through as text.
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	resp, err = c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; !strings.Contains(ch.Message.Content, "<arg_value>99</arg_value>") {
		t.Errorf("tool_choice none: %s", resp.RawJSON())
	}
}
