package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/chat/toolcall"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

// toolChoice is the parsed tool_choice.
type toolChoice struct {
	mode string // "auto", "none", "required" or "named"
	name string
}

func parseToolChoice(raw json.RawMessage, haveTools bool) (toolChoice, *apiError) {
	raw = bytes.TrimSpace(raw)
	tc := toolChoice{mode: "none"}
	if haveTools {
		tc.mode = "auto"
	}
	if len(raw) == 0 || string(raw) == "null" {
		return tc, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			tc.mode = s
		default:
			return tc, badRequest("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or a named function, got %q", s)
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Function.Name == "" {
			return tc, badRequest("tool_choice", "tool_choice object must be {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		tc.mode, tc.name = "named", named.Function.Name
	}
	if tc.mode != "none" && !haveTools {
		return tc, badRequest("tool_choice", "tool_choice %q needs tools", tc.mode)
	}
	return tc, nil
}

// renderOptions sets up a chat template render as transformers'
// apply_chat_template does: the model's special tokens (bos_token,
// eos_token, pad_token, ... from tokenizer_config.json, else the
// tokenizer's BOS and EOS) are template variables, and
// chat_template_kwargs add to them or override them.
func (s *Server) renderOptions(msgs []chat.Message, tools []json.RawMessage, addGen bool, kwargs map[string]any) (chat.RenderOptions, *apiError) {
	opts := chat.RenderOptions{Messages: msgs, Tools: tools, AddGenerationPrompt: addGen, Kwargs: map[string]any{}}
	if id := s.tok.BOS(); id >= 0 {
		opts.BOSToken = s.tok.Piece(id)
	}
	if id := s.tok.EOS(); id >= 0 {
		opts.EOSToken = s.tok.Piece(id)
	}
	for k, v := range s.tmpl.SpecialTokens {
		switch k {
		case "bos_token":
			opts.BOSToken = v
		case "eos_token":
			opts.EOSToken = v
		default:
			opts.Kwargs[k] = v
		}
	}
	for k, v := range kwargs {
		switch k {
		case "messages", "tools", "add_generation_prompt":
			return opts, badRequest("chat_template_kwargs", "chat_template_kwargs cannot set %q; use the request field", k)
		case "bos_token":
			opts.BOSToken = ""
		case "eos_token":
			opts.EOSToken = ""
		}
		opts.Kwargs[k] = v
	}
	return opts, nil
}

// parseMessages decodes messages, naming the message (and its field)
// that is wrong.
func parseMessages(raw json.RawMessage) ([]chat.Message, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("messages", "messages is required")
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, badRequest("messages", "messages must be a list of {\"role\", \"content\"} objects")
	}
	if len(items) == 0 {
		return nil, badRequest("messages", "messages must not be empty")
	}
	msgs := make([]chat.Message, len(items))
	for i, item := range items {
		at := fmt.Sprintf("messages[%d]", i)
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) != nil || fields == nil {
			return nil, badRequest(at, "%s must be a {\"role\", \"content\"} object", at)
		}
		if err := json.Unmarshal(item, &msgs[i]); err != nil {
			var te *json.UnmarshalTypeError
			switch {
			case errors.As(err, &te) && te.Field != "":
				// The path may start with Go names of embedded structs;
				// it is named from the first key the message has.
				path := strings.Split(te.Field, ".")
				for len(path) > 1 && fields[path[0]] == nil {
					path = path[1:]
				}
				field := at + "." + strings.Join(path, ".")
				return nil, badRequest(field, "%s: expected %s, got JSON %s", field, te.Type, te.Value)
			case fields["content"] != nil:
				return nil, badRequest(at+".content", "%s.content must be a string, a list of content parts or null", at)
			}
			return nil, badRequest(at, "%s: %v", at, err)
		}
		switch msgs[i].Role {
		case "system", "user", "assistant", "tool", "developer":
		default:
			return nil, badRequest(at+".role", "%s.role %q is not one of system, user, assistant, tool, developer", at, msgs[i].Role)
		}
		// Text parts are joined into one string, as vLLM's "string"
		// content format does: most templates only take string content.
		if parts, ok := msgs[i].Content.([]chat.ContentPart); ok {
			texts := make([]string, 0, len(parts))
			for j, p := range parts {
				if p.Type != "text" {
					return nil, badRequest(fmt.Sprintf("%s.content[%d].type", at, j), "%s.content[%d]: content part type %q is not supported (text only)", at, j, p.Type)
				}
				texts = append(texts, p.Text)
			}
			msgs[i].Content = strings.Join(texts, "\n")
		}
	}
	return msgs, nil
}

// parseTools checks the tools and returns what the parsers need.
func parseTools(raw []json.RawMessage) ([]toolcall.Tool, *apiError) {
	var out []toolcall.Tool
	for i, t := range raw {
		var tool struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &tool); err != nil || tool.Function == nil || tool.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] must be {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}", i)
		}
		if tool.Type != "" && tool.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type must be \"function\", got %q", i, tool.Type)
		}
		out = append(out, toolcall.Tool{Name: tool.Function.Name, Parameters: tool.Function.Parameters})
	}
	return out, nil
}

// forcedPrefix is text appended to the prompt so the model must answer
// with a tool call, for tool_choice "required" or a named function. It
// works for parsers whose calls open with a tag; others need constrained
// decoding.
func forcedPrefix(parser string, tc toolChoice) (string, bool) {
	switch parser {
	case "spark25":
		if tc.mode == "named" {
			return "<tool_call>" + tc.name, true
		}
		return "<tool_call>", true
	case "hermes":
		if tc.mode == "named" {
			return "<tool_call>\n{\"name\": \"" + tc.name + "\", \"arguments\": ", true
		}
		return "<tool_call>\n", true
	}
	return "", false
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req chatRequest
	if err := s.decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.common(&req.samplingFields); err != nil {
		writeError(w, err)
		return
	}
	if s.tmpl == nil {
		writeError(w, badRequest("messages", "this model has no chat template; use /v1/completions"))
		return
	}
	msgs, merr := parseMessages(req.Messages)
	if merr != nil {
		writeError(w, merr)
		return
	}
	tools, terr := parseTools(req.Tools)
	if terr != nil {
		writeError(w, terr)
		return
	}
	tc, terr := parseToolChoice(req.ToolChoice, len(tools) > 0)
	if terr != nil {
		writeError(w, terr)
		return
	}
	if tc.mode == "named" {
		found := false
		for _, t := range tools {
			found = found || t.Name == tc.name
		}
		if !found {
			writeError(w, badRequest("tool_choice", "tool_choice names %q, which is not among the tools", tc.name))
			return
		}
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	p, perr := s.params(&req.samplingFields)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			writeError(w, badRequest("top_logprobs", "top_logprobs must be between 0 and 20, got %d", *req.TopLogprobs))
			return
		}
		if !req.Logprobs {
			writeError(w, badRequest("top_logprobs", "top_logprobs needs logprobs: true"))
			return
		}
		p.TopLogprobs = *req.TopLogprobs
	}
	p.Logprobs = req.Logprobs
	stops, serr := parseStop(req.Stop)
	if serr != nil {
		writeError(w, serr)
		return
	}

	addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
	var tmplTools []json.RawMessage
	if tc.mode != "none" {
		tmplTools = req.Tools
	}
	opts, oerr := s.renderOptions(msgs, tmplTools, addGen, req.ChatTemplateKwargs)
	if oerr != nil {
		writeError(w, oerr)
		return
	}
	prompt, err := s.tmpl.Render(opts)
	if err != nil {
		writeError(w, badRequest("messages", "chat template: %v", err))
		return
	}
	toolParser := s.cfg.ToolParser
	if tc.mode == "none" {
		toolParser = ""
	}
	forced := ""
	if tc.mode == "required" || tc.mode == "named" {
		f, ok := forcedPrefix(toolParser, tc)
		if !ok {
			writeError(w, badRequest("tool_choice", "tool_choice %q is not supported for this model's tool format (%q) without constrained decoding", tc.mode, toolParser))
			return
		}
		forced = f
		// A generation prompt that opens <think> (Spark, DeepSeek-R1) would
		// put the forced call inside the reasoning, where the reasoning
		// parser keeps tool syntax as text: close the reasoning first, as
		// these templates do for enable_thinking false.
		if s.cfg.ReasoningParser != "" && toolcall.PromptOpensThink(prompt) {
			forced = "</think>" + forced
		}
	}
	ids := s.tok.Encode(prompt+forced, tokenizer.EncodeOptions{ParseSpecial: true})
	maxTok, merr := s.maxTokens(&req.samplingFields, len(ids), "messages")
	if merr != nil {
		writeError(w, merr)
		return
	}
	newParser := func() (toolcall.Parser, error) {
		pr, err := toolcall.New(toolParser, s.cfg.ReasoningParser, tools, toolcall.Options{PromptOpenedThink: toolcall.PromptOpensThink(prompt)})
		if err == nil && forced != "" {
			pr.Feed(forced) // the call the prompt opened; nothing is released yet
		}
		return pr, err
	}
	parsers := make([]toolcall.Parser, n)
	for i := range parsers {
		if parsers[i], err = newParser(); err != nil {
			writeError(w, &apiError{Status: 500, Message: err.Error(), Type: "internal_error"})
			return
		}
	}
	choices, serr2 := s.submit(r, ids, maxTok, p, &req.samplingFields, stops, 0, n)
	if serr2 != nil {
		writeError(w, serr2)
		return
	}
	id := newID("chatcmpl-")
	created := time.Now().Unix()
	s.cfg.Logger.Info("chat", "id", id, "n", n, "prompt_tokens", len(ids), "tools", len(tools), "stream", req.Stream)
	events := pump(choices)
	tm := newTimer(s.metrics, start)
	logprobsOf := func(toks []sample.Token) *chatLogprobs {
		if !req.Logprobs {
			return nil
		}
		lp := &chatLogprobs{Content: []chatLogprob{}}
		for _, t := range toks {
			text := s.tokenText(t.ID)
			e := chatLogprob{Token: text, Logprob: t.Logprob, Bytes: bytesOf(text), TopLogprobs: []chatTopProb{}}
			for _, tl := range t.Top {
				tt := s.tokenText(tl.ID)
				e.TopLogprobs = append(e.TopLogprobs, chatTopProb{Token: tt, Logprob: tl.Logprob, Bytes: bytesOf(tt)})
			}
			lp.Content = append(lp.Content, e)
		}
		return lp
	}
	finishOf := func(why string, calls int) string {
		if why == "stop" && calls > 0 {
			return "tool_calls"
		}
		return why
	}
	// parallel_tool_calls false: at most one call per choice, the first.
	single := req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	base := chatResponse{ID: id, Created: created, Model: s.cfg.ModelName}
	if req.ReturnTokenIDs {
		base.PromptTokenIDs = ids
	}

	if req.Stream {
		out := newSSE(w)
		calls := make([]int, n)
		chunk := func(c chatChoice) error {
			resp := base
			resp.Object, resp.Choices = "chat.completion.chunk", []chatChoice{c}
			return out.send(resp)
		}
		for i := 0; i < n; i++ {
			chunk(chatChoice{Index: i, Delta: &chatMessageOut{Role: "assistant", Content: ptr("")}})
		}
		for cd := range events {
			if cd.d.finish == "abort" {
				streamAborted(out, cd.c, events, choices)
				return
			}
			tm.token(cd.c, len(cd.d.tokens))
			i := cd.c.index
			res := parsers[i].Feed(cd.d.text)
			if cd.d.finish != "" {
				res.Append(parsers[i].Finish())
			}
			delta := &chatMessageOut{}
			if res.Content != "" {
				delta.Content = ptr(res.Content)
			}
			if res.Reasoning != "" {
				delta.ReasoningContent = ptr(res.Reasoning)
			}
			for _, call := range res.Calls {
				if single && calls[i] > 0 {
					break
				}
				var o toolCallOut
				o.Index, o.ID, o.Type = ptr(calls[i]), call.ID, "function"
				o.Function.Name, o.Function.Arguments = call.Name, call.Arguments
				delta.ToolCalls = append(delta.ToolCalls, o)
				calls[i]++
			}
			ch := chatChoice{Index: i, Delta: delta, Logprobs: logprobsOf(cd.d.tokens)}
			if req.ReturnTokenIDs {
				for _, t := range cd.d.tokens {
					ch.TokenIDs = append(ch.TokenIDs, t.ID)
				}
			}
			if cd.d.finish != "" {
				why := finishOf(cd.d.finish, calls[i])
				ch.FinishReason, ch.StopReason = finishPtr(why), cd.c.stopReason
				tm.finish(why)
			} else if delta.Content == nil && delta.ReasoningContent == nil && len(delta.ToolCalls) == 0 && ch.Logprobs == nil && ch.TokenIDs == nil {
				continue
			}
			if err := chunk(ch); err != nil {
				drain(events, choices)
				return
			}
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			resp := base
			resp.Object, resp.Choices, resp.Usage = "chat.completion.chunk", []chatChoice{}, usageOf(choices, len(ids), n)
			out.send(resp)
		}
		tm.end()
		out.done()
		return
	}

	results := make([]toolcall.Result, n)
	for cd := range events {
		tm.token(cd.c, len(cd.d.tokens))
		i := cd.c.index
		results[i].Append(parsers[i].Feed(cd.d.text))
		if cd.d.finish != "" {
			results[i].Append(parsers[i].Finish())
			tm.finish(finishOf(cd.d.finish, len(results[i].Calls)))
		}
	}
	tm.end()
	if r.Context().Err() != nil {
		return
	}
	resp := base
	resp.Object, resp.Usage = "chat.completion", usageOf(choices, len(ids), n)
	for _, c := range choices {
		if c.err != nil {
			writeError(w, &apiError{Status: 500, Message: c.err.Error(), Type: "internal_error"})
			return
		}
		res := results[c.index]
		if single && len(res.Calls) > 1 {
			res.Calls = res.Calls[:1]
		}
		msg := &chatMessage{Role: "assistant", Content: ptr(res.Content)}
		if res.Reasoning != "" {
			msg.ReasoningContent = ptr(res.Reasoning)
		}
		if res.Content == "" && (res.Reasoning != "" || len(res.Calls) > 0) {
			msg.Content = nil // as OpenAI and vLLM answer a call or only reasoning
		}
		for _, call := range res.Calls {
			var o toolCallOut
			o.ID, o.Type = call.ID, "function"
			o.Function.Name, o.Function.Arguments = call.Name, call.Arguments
			msg.ToolCalls = append(msg.ToolCalls, o)
		}
		ch := chatChoice{Index: c.index, Message: msg, Logprobs: logprobsOf(c.tokens), FinishReason: finishPtr(finishOf(c.finish, len(res.Calls))), StopReason: c.stopReason}
		if req.ReturnTokenIDs {
			ch.TokenIDs = c.ids
		}
		resp.Choices = append(resp.Choices, ch)
	}
	writeJSON(w, 200, resp)
}
