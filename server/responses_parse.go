package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/sample"
)

// responsesRequest is POST /v1/responses. Fields not listed are ignored,
// as for the other routes.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Text               *responseText     `json:"text"`
	Reasoning          *responseReason   `json:"reasoning"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Seed               *int64            `json:"seed"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
	Background         bool              `json:"background"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Metadata           map[string]string `json:"metadata"`
	User               *string           `json:"user"`
	// Include lists extra output: "message.output_text.logprobs" (with
	// TopLogprobs alternatives) is done; the others are ignored.
	Include     []string `json:"include"`
	TopLogprobs *int     `json:"top_logprobs"`
}

type responseText struct {
	Format json.RawMessage `json:"format"`
}

type responseReason struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// responsesJob is a parsed Responses request.
type responsesJob struct {
	req  responsesRequest
	conv conversation
	f    samplingFields
	p    sample.Params
}

// parseResponses reads and checks a Responses request.
func (s *Server) parseResponses(w http.ResponseWriter, r *http.Request) (*responsesJob, *apiError) {
	job := &responsesJob{}
	req := &job.req
	if err := s.decode(w, r, req); err != nil {
		return nil, err
	}
	if err := checkResponsesFields(req); err != nil {
		return nil, err
	}
	job.f = samplingFields{Model: req.Model, MaxTokens: req.MaxOutputTokens, Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed, Stream: req.Stream, maxTokensField: "max_output_tokens"}
	if req.Text != nil {
		rf, err := textFormat(req.Text.Format)
		if err != nil {
			return nil, err
		}
		job.f.ResponseFormat = rf
	}
	if err := s.common(&job.f); err != nil {
		// The chat route's names for what the request called text.format.
		if p, ok := err.Param.(string); ok && strings.HasPrefix(p, "response_format") {
			q := "text.format" + strings.TrimPrefix(strings.TrimPrefix(p, "response_format"), ".json_schema")
			err.Param, err.Message = q, strings.ReplaceAll(err.Message, p, q)
		}
		return nil, err
	}
	if s.tmpl == nil {
		return nil, badRequest("input", "this model has no chat template; use /v1/completions")
	}
	msgs, err := parseResponsesInput(req.Input, req.Instructions)
	if err != nil {
		return nil, err
	}
	tools, err := responsesTools(req.Tools)
	if err != nil {
		return nil, err
	}
	choice, err := responsesToolChoice(req.ToolChoice)
	if err != nil {
		return nil, err
	}
	if job.conv, err = parseToolFields(tools, choice); err != nil {
		return nil, err
	}
	job.conv.msgs, job.conv.addGen, job.conv.kwargs = msgs, true, map[string]any{}
	job.conv.single = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	if req.Reasoning != nil && req.Reasoning.Effort != nil && *req.Reasoning.Effort == "none" {
		job.conv.kwargs["enable_thinking"] = false // the switch Qwen3's and Spark's templates read
	}
	if job.p, err = s.params(&job.f); err != nil {
		return nil, err
	}
	if slices.Contains(req.Include, "message.output_text.logprobs") {
		job.p.Logprobs = true
		if req.TopLogprobs != nil {
			job.p.TopLogprobs = *req.TopLogprobs
		}
	}
	return job, nil
}

// checkResponsesFields refuses what this server does not do.
func checkResponsesFields(req *responsesRequest) *apiError {
	switch {
	case req.PreviousResponseID != nil && *req.PreviousResponseID != "":
		return badRequest("previous_response_id", "previous_response_id is not supported: this server stores no responses (store: false); send the whole conversation as input")
	case len(bytes.TrimSpace(req.Conversation)) > 0 && string(bytes.TrimSpace(req.Conversation)) != "null":
		return badRequest("conversation", "conversation is not supported: this server stores no conversations; send the whole conversation as input")
	case req.Background:
		return badRequest("background", "background is not supported")
	case req.MaxOutputTokens != nil && *req.MaxOutputTokens < 1:
		return badRequest("max_output_tokens", "max_output_tokens must be at least 1, got %d", *req.MaxOutputTokens)
	case req.TopLogprobs != nil && (*req.TopLogprobs < 0 || *req.TopLogprobs > 20):
		return badRequest("top_logprobs", "top_logprobs must be between 0 and 20, got %d", *req.TopLogprobs)
	}
	if req.Reasoning != nil && req.Reasoning.Effort != nil {
		return checkEffort("reasoning.effort", *req.Reasoning.Effort)
	}
	return nil
}

// checkEffort checks a reasoning effort against OpenAI's values.
func checkEffort(field, e string) *apiError {
	switch e {
	case "none", "minimal", "low", "medium", "high", "xhigh":
		return nil
	}
	return badRequest(field, "%s must be one of none, minimal, low, medium, high, xhigh, got %q", field, e)
}

// textFormat maps text.format onto the chat route's response_format, so
// structured outputs take one path: {"type": "json_schema", "name",
// "schema", "strict"} becomes {"type": "json_schema", "json_schema":
// {...}}; json_object and text pass as they are.
func textFormat(raw json.RawMessage) (json.RawMessage, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, badRequest("text.format", "text.format must be an object with a type")
	}
	switch f.Type {
	case "text", "json_object":
		return raw, nil
	case "json_schema":
		if !present(f.Schema) {
			return nil, badRequest("text.format.schema", "text.format of type json_schema needs a schema")
		}
		out, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": f.Strict}})
		return out, nil
	}
	return nil, badRequest("text.format", "text.format type must be \"text\", \"json_object\" or \"json_schema\", got %q", f.Type)
}

// responsesTools turns Responses function tools ({"type": "function",
// "name", "parameters", ...}) into chat's shape for the template and the
// parsers; other tool types are refused by name.
func responsesTools(raw []json.RawMessage) ([]json.RawMessage, *apiError) {
	out := make([]json.RawMessage, 0, len(raw))
	for i, t := range raw {
		at := fmt.Sprintf("tools[%d]", i)
		var tool struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(t, &tool); err != nil {
			return nil, badRequest(at, "%s must be {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", at)
		}
		if tool.Type != "function" {
			return nil, badRequest(at+".type", "%s.type %q is not supported: this server runs function tools only", at, tool.Type)
		}
		if tool.Name == "" {
			return nil, badRequest(at+".name", "%s.name is required", at)
		}
		fn := map[string]any{"name": tool.Name}
		if tool.Description != nil {
			fn["description"] = *tool.Description
		}
		if len(tool.Parameters) > 0 && string(tool.Parameters) != "null" {
			fn["parameters"] = tool.Parameters
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": fn})
		out = append(out, b)
	}
	return out, nil
}

// responsesToolChoice turns tool_choice into chat's shape: the strings
// are the same, a named function is {"type": "function", "name": ...}.
func responsesToolChoice(raw json.RawMessage) (json.RawMessage, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return raw, nil
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Name == "" {
		return nil, badRequest("tool_choice", "tool_choice object must be {\"type\": \"function\", \"name\": ...}")
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	return b, nil
}

// responsesItem is one input item; which fields count depends on type.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// parseResponsesInput turns instructions and input (a string, or a list
// of message, function_call, function_call_output and reasoning items)
// into chat messages. Consecutive assistant items (reasoning, text, calls)
// make one assistant message, as chat templates expect.
func parseResponsesInput(raw json.RawMessage, instructions *string) ([]chat.Message, *apiError) {
	var msgs []chat.Message
	if instructions != nil && *instructions != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: *instructions})
	}
	raw = bytes.TrimSpace(raw)
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return append(msgs, chat.Message{Role: "user", Content: text}), nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, badRequest("input", "input must be a string or a list of items")
	}
	if len(items) == 0 {
		return nil, badRequest("input", "input must not be empty")
	}
	names := map[string]string{} // call_id -> function name
	for i, rawItem := range items {
		at := fmt.Sprintf("input[%d]", i)
		var it responsesItem
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return nil, badRequest(at, "%s must be a message, function_call, function_call_output or reasoning item", at)
		}
		var err *apiError
		if msgs, err = addResponsesItem(msgs, it, at, names); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// addResponsesItem appends one input item to msgs.
func addResponsesItem(msgs []chat.Message, it responsesItem, at string, names map[string]string) ([]chat.Message, *apiError) {
	// lastAssistant is the assistant message the item joins, or a new one.
	lastAssistant := func(joinable bool) *chat.Message {
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && joinable {
			return &msgs[n-1]
		}
		msgs = append(msgs, chat.Message{Role: "assistant"})
		return &msgs[len(msgs)-1]
	}
	switch it.Type {
	case "", "message":
		text, err := itemText(it.Content, at+".content")
		if err != nil {
			return nil, err
		}
		switch it.Role {
		case "user", "system":
			msgs = append(msgs, chat.Message{Role: it.Role, Content: text})
		case "developer": // chat templates know system, not developer
			msgs = append(msgs, chat.Message{Role: "system", Content: text})
		case "assistant":
			m := lastAssistant(true)
			if m.Content != nil || len(m.ToolCalls) > 0 {
				m = lastAssistant(false)
			}
			m.Content = text
		default:
			return nil, badRequest(at+".role", "%s.role %q is not one of user, assistant, system, developer", at, it.Role)
		}
	case "function_call":
		if it.Name == "" || it.CallID == "" || it.Arguments == nil {
			return nil, badRequest(at, "%s: a function_call needs name, call_id and arguments", at)
		}
		args, _ := json.Marshal(*it.Arguments) // a string holding JSON, as OpenAI clients send it
		m := lastAssistant(true)
		m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: it.CallID, Type: "function", Function: chat.FunctionCall{Name: it.Name, Arguments: args}})
		names[it.CallID] = it.Name
	case "function_call_output":
		if it.CallID == "" {
			return nil, badRequest(at+".call_id", "%s.call_id is required", at)
		}
		out, err := itemText(it.Output, at+".output")
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, chat.Message{Role: "tool", Content: out, ToolCallID: it.CallID, Name: names[it.CallID]})
	case "reasoning":
		text, err := reasoningText(it.Content, at+".content")
		if err != nil {
			return nil, err
		}
		m := lastAssistant(false)
		m.ReasoningContent = text
	case "item_reference":
		return nil, badRequest(at+".type", "%s: item_reference is not supported: this server stores no items", at)
	default:
		return nil, badRequest(at+".type", "%s.type %q is not supported (message, function_call, function_call_output, reasoning)", at, it.Type)
	}
	return msgs, nil
}

// itemText is a content or output value: a string, or a list of text
// parts (input_text, output_text) joined as chat joins them.
func itemText(raw json.RawMessage, at string) (string, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", badRequest(at, "%s must be a string or a list of input_text parts", at)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		if (p.Type != "input_text" && p.Type != "output_text") || p.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d].type", at, j), "%s[%d]: part type %q is not supported (input_text, output_text with text)", at, j, p.Type)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// reasoningText is the text of a reasoning item's reasoning_text parts.
func reasoningText(raw json.RawMessage, at string) (string, *apiError) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return "", nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", badRequest(at, "%s must be a list of reasoning_text parts", at)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}
