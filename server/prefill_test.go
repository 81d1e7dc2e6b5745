package server

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// A prefilled answer: chat's continue_final_message (vLLM's) and a final
// assistant message on Anthropic Messages render the conversation with
// the last message left open (the /tokenize render with the same flag,
// whose text ends with the prefill), and greedy decoding continues it as
// /v1/completions does from those token ids; the response holds only
// the continuation.
func TestPrefilledAnswer(t *testing.T) {
	ts := qwen(t)
	msgs := []map[string]any{{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "My answer is"}}

	code, raw := ts.post(t, "/tokenize", map[string]any{"messages": msgs, "continue_final_message": true, "return_token_strs": true})
	var tok struct{ Tokens []int }
	if err := json.Unmarshal(raw, &tok); code != 200 || err != nil {
		t.Fatalf("tokenize: %d %v %s", code, err, raw)
	}
	code, raw = ts.post(t, "/detokenize", map[string]any{"tokens": tok.Tokens})
	if code != 200 || !strings.HasSuffix(string(raw), `My answer is"}`+"\n") || strings.Count(string(raw), "<|im_start|>assistant") != 1 {
		t.Fatalf("detokenize: %d %s", code, raw)
	}

	code, raw = ts.post(t, "/v1/completions", map[string]any{"prompt": tok.Tokens, "max_tokens": 8, "temperature": 0, "ignore_eos": true})
	var want completionResponse
	if err := json.Unmarshal(raw, &want); code != 200 || err != nil {
		t.Fatalf("completion: %d %v %s", code, err, raw)
	}

	code, raw = ts.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "continue_final_message": true, "add_generation_prompt": false,
		"max_tokens": 8, "temperature": 0, "ignore_eos": true, "return_token_ids": true})
	var got struct {
		Choices []struct {
			Message struct{ Content string }
		}
		PromptTokenIDs []int `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal(raw, &got); code != 200 || err != nil {
		t.Fatalf("chat: %d %v %s", code, err, raw)
	}
	if !slices.Equal(got.PromptTokenIDs, tok.Tokens) || got.Choices[0].Message.Content != want.Choices[0].Text {
		t.Errorf("chat: prompt %v, text %q; tokenize %v, completion %q", got.PromptTokenIDs, got.Choices[0].Message.Content, tok.Tokens, want.Choices[0].Text)
	}

	code, raw = ts.post(t, "/v1/messages", map[string]any{"max_tokens": 8, "temperature": 0, "messages": msgs})
	var m struct {
		Content []struct{ Text string }
		Usage   struct {
			Input  int `json:"input_tokens"`
			Cached int `json:"cache_read_input_tokens"` // Anthropic's input_tokens leaves them out
		}
	}
	if err := json.Unmarshal(raw, &m); code != 200 || err != nil || len(m.Content) != 1 {
		t.Fatalf("messages: %d %v %s", code, err, raw)
	}
	if m.Usage.Input+m.Usage.Cached != len(tok.Tokens) || !strings.HasPrefix(want.Choices[0].Text, m.Content[0].Text) {
		t.Errorf("messages: %d input tokens, text %q; want %d, %q", m.Usage.Input+m.Usage.Cached, m.Content[0].Text, len(tok.Tokens), want.Choices[0].Text)
	}

	for _, bad := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/v1/chat/completions", map[string]any{"messages": msgs, "continue_final_message": true, "add_generation_prompt": true}, "continue_final_message"},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}}, "continue_final_message": true}, "messages"},
		{"/v1/messages", map[string]any{"max_tokens": 4, "messages": []map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Yes "}}}, "messages.1.content"},
	} {
		if code, raw := ts.post(t, bad.path, bad.body); code != 400 || !strings.Contains(string(raw), bad.field) {
			t.Errorf("%s %v: %d %s", bad.path, bad.body, code, raw)
		}
	}
}

// Chat's reasoning_effort "none" renders as enable_thinking false (the
// Qwen3 template's empty think block), as the Responses route's
// reasoning.effort does; chat_template_kwargs still decide when they set
// it, and an unknown effort is a 400 naming the field.
func TestChatReasoningEffort(t *testing.T) {
	ts := qwen(t)
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	prompt := func(extra map[string]any) []int {
		t.Helper()
		body := map[string]any{"messages": msgs, "max_tokens": 1, "return_token_ids": true}
		maps.Copy(body, extra)
		code, raw := ts.post(t, "/v1/chat/completions", body)
		var r struct {
			PromptTokenIDs []int `json:"prompt_token_ids"`
		}
		if err := json.Unmarshal(raw, &r); code != 200 || err != nil {
			t.Fatalf("%v: %d %v %s", extra, code, err, raw)
		}
		return r.PromptTokenIDs
	}
	plain := prompt(nil)
	off := prompt(map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}})
	if slices.Equal(plain, off) {
		t.Fatal("enable_thinking false renders as the default")
	}
	if got := prompt(map[string]any{"reasoning_effort": "none"}); !slices.Equal(got, off) {
		t.Errorf("reasoning_effort none: %v, want %v", got, off)
	}
	if got := prompt(map[string]any{"reasoning_effort": "high"}); !slices.Equal(got, plain) {
		t.Errorf("reasoning_effort high: %v, want %v", got, plain)
	}
	if got := prompt(map[string]any{"reasoning_effort": "none", "chat_template_kwargs": map[string]any{"enable_thinking": true}}); !slices.Equal(got, plain) {
		t.Errorf("chat_template_kwargs enable_thinking true beside reasoning_effort none: %v", got)
	}
	if code, raw := ts.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "reasoning_effort": "max"}); code != 400 || !strings.Contains(string(raw), `"param":"reasoning_effort"`) {
		t.Errorf("reasoning_effort max: %d %s", code, raw)
	}
}

// vLLM's echo on chat: the answer starts with the prefill it continued,
// in a response and in a stream; echo without a final assistant message
// changes nothing.
func TestChatEchoPrefill(t *testing.T) {
	ts := qwen(t)
	msgs := []map[string]any{{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "My answer is"}}
	body := map[string]any{"messages": msgs, "continue_final_message": true, "max_tokens": 6, "temperature": 0, "ignore_eos": true}
	content := func(extra map[string]any) string {
		t.Helper()
		b := maps.Clone(body)
		maps.Copy(b, extra)
		code, raw := ts.post(t, "/v1/chat/completions", b)
		if code != 200 {
			t.Fatalf("%v: %d %s", extra, code, raw)
		}
		text := ""
		for _, e := range bodies(t, raw, b["stream"] == true) {
			var r struct {
				Choices []struct {
					Message, Delta struct{ Content *string }
				}
			}
			json.Unmarshal(e, &r)
			for _, c := range r.Choices {
				for _, p := range []*string{c.Message.Content, c.Delta.Content} {
					if p != nil {
						text += *p
					}
				}
			}
		}
		return text
	}
	plain := content(nil)
	for _, stream := range []bool{false, true} {
		if got := content(map[string]any{"echo": true, "stream": stream}); got != "My answer is"+plain {
			t.Errorf("stream=%v: %q, want the prefill then %q", stream, got, plain)
		}
	}
	body["messages"], body["continue_final_message"] = msgs[:1], false
	if a, b := content(nil), content(map[string]any{"echo": true}); a != b {
		t.Errorf("echo after a user message: %q, without %q", b, a)
	}
}
