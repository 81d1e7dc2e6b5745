package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/sample"
)

// messagesRequest is Anthropic's POST /v1/messages. Field paths in
// errors use Anthropic's notation (messages.0.content.1.type).
type messagesRequest struct {
	Model         string            `json:"model"`
	MaxTokens     *int              `json:"max_tokens"`
	System        json.RawMessage   `json:"system"`
	Messages      []json.RawMessage `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	StopSequences []string          `json:"stop_sequences"`
	Temperature   *float64          `json:"temperature"`
	TopP          *float64          `json:"top_p"`
	TopK          *int              `json:"top_k"`
	Stream        bool              `json:"stream"`
	Thinking      *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	Metadata json.RawMessage `json:"metadata"`
}

// messagesJob is a parsed Messages request.
type messagesJob struct {
	req   messagesRequest
	conv  conversation
	f     samplingFields
	p     sample.Params
	stops []string
}

// parseMessagesRequest reads and checks a Messages request; counting (for
// count_tokens) needs no max_tokens.
func (s *Server) parseMessagesRequest(w http.ResponseWriter, r *http.Request, counting bool) (*messagesJob, *apiError) {
	job := &messagesJob{}
	req := &job.req
	if err := s.decode(w, r, req); err != nil {
		return nil, err
	}
	if counting && req.MaxTokens == nil {
		req.MaxTokens = ptr(1)
	}
	switch {
	case req.MaxTokens == nil:
		return nil, badRequest("max_tokens", "max_tokens: Field required")
	case *req.MaxTokens < 1:
		return nil, badRequest("max_tokens", "max_tokens: must be at least 1, got %d", *req.MaxTokens)
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1):
		return nil, badRequest("temperature", "temperature: must be between 0 and 1, got %v", *req.Temperature)
	case req.Thinking != nil && req.Thinking.Type != "enabled" && req.Thinking.Type != "disabled" && req.Thinking.Type != "adaptive":
		return nil, badRequest("thinking.type", "thinking.type: must be enabled, disabled or adaptive, got %q", req.Thinking.Type)
	}
	job.f = samplingFields{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, Stream: req.Stream}
	if err := s.common(&job.f); err != nil {
		return nil, err
	}
	if s.tmpl == nil {
		return nil, badRequest("messages", "messages: this model has no chat template; use /v1/completions")
	}
	msgs, err := parseAnthropicMessages(req.System, req.Messages)
	if err != nil {
		return nil, err
	}
	if job.conv, err = anthropicTools(req.Tools, req.ToolChoice); err != nil {
		return nil, err
	}
	job.conv.msgs, job.conv.addGen, job.conv.kwargs = msgs, true, map[string]any{}
	if last := msgs[len(msgs)-1]; last.Role == "assistant" {
		// A final assistant message is the start of the answer, which
		// the model continues (Anthropic's prefill).
		if text, _ := last.Content.(string); text != strings.TrimRight(text, " \t\r\n") {
			return nil, badRequest(fmt.Sprintf("messages.%d.content", len(req.Messages)-1), "messages: final assistant content cannot end with trailing whitespace")
		}
		job.conv.addGen, job.conv.cont = false, true
	}
	if req.Thinking != nil && req.Thinking.Type == "disabled" {
		job.conv.kwargs["enable_thinking"] = false // the switch Qwen3's and Spark's templates read
	}
	if job.p, err = s.params(&job.f); err != nil {
		return nil, err
	}
	for _, st := range req.StopSequences {
		if st != "" {
			job.stops = append(job.stops, st)
		}
	}
	return job, nil
}

// anthropicTools turns tools ({"name", "description", "input_schema"})
// and tool_choice ({"type": "auto" | "any" | "tool" | "none"}) into the
// chat shapes; server tools (with a versioned type) are refused.
func anthropicTools(raw []json.RawMessage, rawChoice json.RawMessage) (conversation, *apiError) {
	tools := make([]json.RawMessage, 0, len(raw))
	for i, t := range raw {
		at := fmt.Sprintf("tools.%d", i)
		var tool struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(t, &tool); err != nil {
			return conversation{}, badRequest(at, "%s: must be {\"name\", \"description\", \"input_schema\"}", at)
		}
		if tool.Type != "" && tool.Type != "custom" {
			return conversation{}, badRequest(at+".type", "%s.type: tool type %q is not supported: this server runs client tools only", at, tool.Type)
		}
		if tool.Name == "" {
			return conversation{}, badRequest(at+".name", "%s.name: Field required", at)
		}
		if len(bytes.TrimSpace(tool.InputSchema)) == 0 || bytes.TrimSpace(tool.InputSchema)[0] != '{' {
			return conversation{}, badRequest(at+".input_schema", "%s.input_schema: Field required (a JSON schema object)", at)
		}
		fn := map[string]any{"name": tool.Name, "parameters": tool.InputSchema}
		if tool.Description != nil {
			fn["description"] = *tool.Description
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": fn})
		tools = append(tools, b)
	}
	choice, single, err := anthropicToolChoice(rawChoice)
	if err != nil {
		return conversation{}, err
	}
	conv, err := parseToolFields(tools, choice)
	conv.single = single
	return conv, err
}

func anthropicToolChoice(raw json.RawMessage) (json.RawMessage, bool, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if json.Unmarshal(raw, &tc) != nil {
		return nil, false, badRequest("tool_choice", "tool_choice: must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}")
	}
	var out any
	switch tc.Type {
	case "auto", "none":
		out = tc.Type
	case "any":
		out = "required"
	case "tool":
		if tc.Name == "" {
			return nil, false, badRequest("tool_choice.name", "tool_choice.name: Field required for type tool")
		}
		out = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
	default:
		return nil, false, badRequest("tool_choice.type", "tool_choice.type: must be auto, any, tool or none, got %q", tc.Type)
	}
	b, _ := json.Marshal(out)
	return b, tc.DisableParallelToolUse, nil
}

// anthropicBlock is one content block of a message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Thinking  *string         `json:"thinking"`
}

// parseAnthropicMessages turns system and messages into chat messages:
// a user message's tool_result blocks become tool messages (before its
// text), an assistant's tool_use blocks its tool calls and its thinking
// blocks its reasoning.
func parseAnthropicMessages(system json.RawMessage, raw []json.RawMessage) ([]chat.Message, *apiError) {
	var msgs []chat.Message
	if s := bytes.TrimSpace(system); len(s) > 0 && string(s) != "null" {
		text, err := anthropicText(s, "system")
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, chat.Message{Role: "system", Content: text})
	}
	if len(raw) == 0 {
		return nil, badRequest("messages", "messages: Field required (a non-empty list)")
	}
	names := map[string]string{} // tool_use id -> tool name
	for i, item := range raw {
		at := fmt.Sprintf("messages.%d", i)
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(item, &m) != nil {
			return nil, badRequest(at, "%s: must be {\"role\", \"content\"}", at)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest(at+".role", "%s.role: must be user or assistant, got %q", at, m.Role)
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			msgs = append(msgs, chat.Message{Role: m.Role, Content: text})
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			return nil, badRequest(at+".content", "%s.content: must be a string or a list of content blocks", at)
		}
		var err *apiError
		if msgs, err = addAnthropicBlocks(msgs, m.Role, blocks, at+".content", names); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// addAnthropicBlocks appends one message given as blocks.
func addAnthropicBlocks(msgs []chat.Message, role string, blocks []anthropicBlock, at string, names map[string]string) ([]chat.Message, *apiError) {
	out := chat.Message{Role: role}
	var texts []string
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.%d", at, j)
		switch {
		case b.Type == "text" && b.Text != nil:
			texts = append(texts, *b.Text)
		case b.Type == "thinking" && role == "assistant" && b.Thinking != nil:
			out.ReasoningContent += *b.Thinking
		case b.Type == "redacted_thinking" && role == "assistant":
		case b.Type == "tool_use" && role == "assistant":
			if b.ID == "" || b.Name == "" || len(bytes.TrimSpace(b.Input)) == 0 || bytes.TrimSpace(b.Input)[0] != '{' {
				return nil, badRequest(bat, "%s: a tool_use block needs id, name and an input object", bat)
			}
			out.ToolCalls = append(out.ToolCalls, chat.ToolCall{ID: b.ID, Type: "function", Function: chat.FunctionCall{Name: b.Name, Arguments: b.Input}})
			names[b.ID] = b.Name
		case b.Type == "tool_result" && role == "user":
			if b.ToolUseID == "" {
				return nil, badRequest(bat+".tool_use_id", "%s.tool_use_id: Field required", bat)
			}
			text, err := anthropicText(b.Content, bat+".content")
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, chat.Message{Role: "tool", Content: text, ToolCallID: b.ToolUseID, Name: names[b.ToolUseID]})
		default:
			return nil, badRequest(bat+".type", "%s.type: block type %q is not supported in a %s message (text, tool_use, tool_result, thinking)", bat, b.Type, role)
		}
	}
	if len(texts) > 0 || len(out.ToolCalls) > 0 || out.ReasoningContent != "" {
		out.Content = strings.Join(texts, "\n")
		msgs = append(msgs, out)
	}
	return msgs, nil
}

// anthropicText is a string or a list of text blocks, joined.
func anthropicText(raw json.RawMessage, at string) (string, *apiError) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", badRequest(at, "%s: must be a string or a list of text blocks", at)
	}
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return "", badRequest(fmt.Sprintf("%s.%d.type", at, j), "%s.%d.type: only text blocks are supported here, got %q", at, j, b.Type)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}
