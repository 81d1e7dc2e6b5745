package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
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

// generationPrompt is whether the render opens an assistant turn:
// add_generation_prompt, true unless given, and false when the final
// message is continued (the two cannot both be asked for).
func generationPrompt(add *bool, cont bool) (bool, *apiError) {
	switch {
	case cont && add != nil && *add:
		return false, badRequest("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true")
	case cont:
		return false, nil
	}
	return add == nil || *add, nil
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
	case "llama3_json", "mistral":
		return "", true // the tool-call grammar writes the whole call
	}
	return "", false
}

// conversation is what a chat prompt is rendered from; every chat-shaped
// route (chat completions, Responses, Anthropic Messages) turns its
// request into one.
type conversation struct {
	msgs     []chat.Message
	rawTools []json.RawMessage // as the template takes them: OpenAI's function tools
	tools    []toolcall.Tool
	tc       toolChoice
	kwargs   map[string]any
	addGen   bool
	cont     bool // continue the final message (no generation prompt)
	single   bool // parallel_tool_calls false: at most one call per choice
}

// turn is a rendered conversation: the prompt's ids and how to parse
// what the model answers.
type turn struct {
	prompt     string
	forced     string // text the prompt ends with to force a tool call
	ids        []int
	toolParser string
	tools      []toolcall.Tool
	single     bool
	callTools  []toolcall.Tool   // tool_choice required or named: the output must call one of these
	autoTools  bool              // tool_choice auto: calls are constrained once they start
	parsers    []toolcall.Parser // one per choice, set by startTurn
}

// chatJob is a parsed chat completions request.
type chatJob struct {
	req   chatRequest
	conv  conversation
	p     sample.Params
	stops []string
	echo  string // what the answer starts with (echo)
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) *apiError {
	job, t, g, base, err := s.startChat(w, r)
	if err != nil {
		return err
	}
	if job.req.Stream {
		s.streamChat(w, job, t, g, base)
		return nil
	}
	resp, err := s.collectChat(r, job, t, g, base)
	if err != nil {
		return err
	}
	writeJSON(w, 200, resp)
	return nil
}

// startChat parses a chat request, renders it and submits its choices;
// base is the response's frame.
func (s *Server) startChat(w http.ResponseWriter, r *http.Request) (*chatJob, *turn, *gen, chatResponse, *apiError) {
	start := time.Now()
	job, err := s.parseChat(w, r)
	if err != nil {
		return nil, nil, nil, chatResponse{}, err
	}
	t, err := s.render(job.conv, "messages")
	if err != nil {
		return nil, nil, nil, chatResponse{}, err
	}
	g, err := s.startTurn(r, t, &job.req.samplingFields, job.p, job.stops, "messages", start)
	if err != nil {
		return nil, nil, nil, chatResponse{}, err
	}
	id := newID("chatcmpl-")
	s.cfg.Logger.Info("chat", "id", id, "n", g.n, "prompt_tokens", len(t.ids), "tools", len(t.tools), "stream", job.req.Stream)
	base := chatResponse{ID: id, Created: time.Now().Unix(), Model: s.cfg.ModelName}
	if job.req.ReturnTokenIDs {
		base.PromptTokenIDs = t.ids
	}
	return job, t, g, base, nil
}

// parseChat reads and checks a chat completions request.
func (s *Server) parseChat(w http.ResponseWriter, r *http.Request) (*chatJob, *apiError) {
	job := &chatJob{}
	req := &job.req
	if err := s.decode(w, r, req); err != nil {
		return nil, err
	}
	if err := s.common(&req.samplingFields); err != nil {
		return nil, err
	}
	if slices.Contains(req.Modalities, "audio") {
		return nil, badRequest("modalities", "audio output needs a speech model beside the LLM (siskin serve --speech-model)")
	}
	if s.tmpl == nil {
		return nil, badRequest("messages", "this model has no chat template; use /v1/completions")
	}
	msgs, err := parseMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	conv, err := parseToolFields(req.Tools, req.ToolChoice)
	if err != nil {
		return nil, err
	}
	conv.msgs, conv.kwargs = msgs, req.ChatTemplateKwargs
	if e := req.ReasoningEffort; e != nil {
		if err := checkEffort("reasoning_effort", *e); err != nil {
			return nil, err
		}
		conv.kwargs = maps.Clone(conv.kwargs)
		if conv.kwargs == nil {
			conv.kwargs = map[string]any{}
		}
		if _, set := conv.kwargs["reasoning_effort"]; !set {
			conv.kwargs["reasoning_effort"] = *e // for templates that read it
		}
		if _, set := conv.kwargs["enable_thinking"]; !set && *e == "none" {
			conv.kwargs["enable_thinking"] = false // the switch Qwen3's and Spark's templates read
		}
	}
	conv.cont = req.ContinueFinalMessage
	if conv.addGen, err = generationPrompt(req.AddGenerationPrompt, conv.cont); err != nil {
		return nil, err
	}
	conv.single = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	job.conv = conv
	if last := msgs[len(msgs)-1]; req.Echo && last.Role == "assistant" {
		job.echo = chat.TextOf(last.Content)
	}
	if job.p, err = s.params(&req.samplingFields); err != nil {
		return nil, err
	}
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			return nil, badRequest("top_logprobs", "top_logprobs must be between 0 and 20, got %d", *req.TopLogprobs)
		}
		if !req.Logprobs {
			return nil, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		job.p.TopLogprobs = *req.TopLogprobs
	}
	job.p.Logprobs = req.Logprobs
	if job.stops, err = parseStop(req.Stop); err != nil {
		return nil, err
	}
	return job, nil
}

// parseToolFields checks tools and tool_choice (in OpenAI's chat shape)
// and returns a conversation holding them.
func parseToolFields(rawTools []json.RawMessage, rawChoice json.RawMessage) (conversation, *apiError) {
	tools, err := parseTools(rawTools)
	if err != nil {
		return conversation{}, err
	}
	tc, err := parseToolChoice(rawChoice, len(tools) > 0)
	if err != nil {
		return conversation{}, err
	}
	if err := checkNamedTool(tc, tools); err != nil {
		return conversation{}, err
	}
	return conversation{rawTools: rawTools, tools: tools, tc: tc}, nil
}

// checkNamedTool refuses a tool_choice that names a tool not offered.
func checkNamedTool(tc toolChoice, tools []toolcall.Tool) *apiError {
	if tc.mode != "named" {
		return nil
	}
	for _, t := range tools {
		if t.Name == tc.name {
			return nil
		}
	}
	return badRequest("tool_choice", "tool_choice names %q, which is not among the tools", tc.name)
}

// render renders a conversation through the chat template; field names
// the request field that holds the messages.
func (s *Server) render(c conversation, field string) (*turn, *apiError) {
	var tmplTools []json.RawMessage
	if c.tc.mode != "none" {
		tmplTools = c.rawTools
	}
	opts, err := s.renderOptions(c.msgs, tmplTools, c.addGen, c.kwargs)
	if err != nil {
		return nil, err
	}
	opts.ContinueFinalMessage = c.cont
	prompt, rerr := s.tmpl.Render(opts)
	if rerr != nil {
		return nil, badRequest(field, "chat template: %v", rerr)
	}
	t := &turn{prompt: prompt, toolParser: s.cfg.ToolParser, tools: c.tools, single: c.single}
	if c.tc.mode == "none" {
		t.toolParser = ""
	}
	t.autoTools = c.tc.mode == "auto"
	if c.tc.mode == "required" || c.tc.mode == "named" {
		f, ok := forcedPrefix(t.toolParser, c.tc)
		if !ok {
			return nil, badRequest("tool_choice", "tool_choice %q is not supported for this model's tool format (%q) without constrained decoding", c.tc.mode, t.toolParser)
		}
		t.forced = f
		t.callTools = namedTools(c.tc, c.tools)
		// A generation prompt that opens <think> (Spark, DeepSeek-R1) would
		// put the forced call inside the reasoning, where the reasoning
		// parser keeps tool syntax as text: close the reasoning first, as
		// these templates do for enable_thinking false.
		if s.cfg.ReasoningParser != "" && toolcall.PromptOpensThink(prompt) {
			t.forced = "</think>" + t.forced
		}
	}
	t.ids = s.tok.Encode(prompt+t.forced, tokenizer.EncodeOptions{ParseSpecial: true})
	return t, nil
}

// startTurn sets up the output parsers of a rendered conversation and
// submits its choices (n of them, from f) to the engine.
func (s *Server) startTurn(r *http.Request, t *turn, f *samplingFields, p sample.Params, stops []string, field string, start time.Time) (*gen, *apiError) {
	n := 1
	if f.N != nil {
		n = *f.N
	}
	t.ids = s.truncate(f.TruncatePromptTokens, t.ids)
	maxTok, err := s.maxTokens(f, len(t.ids), field)
	if err != nil {
		return nil, err
	}
	t.parsers = make([]toolcall.Parser, n)
	for i := range t.parsers {
		pr, perr := toolcall.New(t.toolParser, s.cfg.ReasoningParser, t.tools, toolcall.Options{PromptOpenedThink: toolcall.PromptOpensThink(t.prompt)})
		if perr != nil {
			return nil, internalError(perr)
		}
		if t.forced != "" {
			pr.Feed(t.forced) // the call the prompt opened; nothing is released yet
		}
		t.parsers[i] = pr
	}
	if err := s.constrainTools(t, f); err != nil {
		return nil, err
	}
	choices, err := s.submit(r, t.ids, maxTok, p, f, stops, 0, n)
	if err != nil {
		return nil, err
	}
	return newGen(s.metrics, start, choices, len(t.ids), n), nil
}

// feed parses a choice's delta: content, reasoning and tool calls.
func (t *turn) feed(cd choiceDelta) toolcall.Result {
	pr := t.parsers[cd.c.index]
	res := pr.Feed(cd.d.text)
	if cd.d.finish != "" {
		res.Append(pr.Finish())
	}
	return res
}

// finishOf is the finish reason of a choice that made calls tool calls.
func finishOf(why string, calls int) string {
	if why == "stop" && calls > 0 {
		return "tool_calls"
	}
	return why
}

// chatLogprobs is the logprobs object of tokens, nil when not asked for.
func (s *Server) chatLogprobs(on bool, toks []sample.Token) *chatLogprobs {
	if !on {
		return nil
	}
	lp := &chatLogprobs{Content: []chatLogprob{}}
	for _, t := range toks {
		text := s.tokenText(t.ID)
		e := chatLogprob{Token: text, Logprob: wireLogprob(t.Logprob), Bytes: bytesOf(text), TopLogprobs: []chatTopProb{}}
		for _, tl := range t.Top {
			tt := s.tokenText(tl.ID)
			e.TopLogprobs = append(e.TopLogprobs, chatTopProb{Token: tt, Logprob: wireLogprob(tl.Logprob), Bytes: bytesOf(tt)})
		}
		lp.Content = append(lp.Content, e)
	}
	return lp
}

// streamChat sends chat.completion.chunk events as the choices generate.
func (s *Server) streamChat(w http.ResponseWriter, job *chatJob, t *turn, g *gen, base chatResponse) {
	out := newSSE(w)
	calls := make([]int, g.n)
	chunk := func(c chatChoice) error {
		resp := base
		resp.Object, resp.Choices = "chat.completion.chunk", []chatChoice{c}
		return out.send(resp)
	}
	for i := 0; i < g.n; i++ {
		chunk(chatChoice{Index: i, Delta: &chatMessageOut{Role: "assistant", Content: ptr(job.echo)}})
	}
	ok := g.stream(out.fail, func(cd choiceDelta) error {
		ch, has := s.chatDelta(job, t, cd, &calls[cd.c.index])
		if cd.d.finish != "" {
			g.tm.finish(*ch.FinishReason)
		} else if !has {
			return nil
		}
		return chunk(ch)
	})
	if !ok {
		return
	}
	if so := job.req.StreamOptions; so != nil && so.IncludeUsage {
		resp := base
		resp.Object, resp.Choices, resp.Usage = "chat.completion.chunk", []chatChoice{}, g.usage()
		out.send(resp)
	}
	out.done()
}

// chatDelta is the chunk choice of one delta; calls counts the choice's
// tool calls so far. It reports whether the chunk carries anything.
func (s *Server) chatDelta(job *chatJob, t *turn, cd choiceDelta, calls *int) (chatChoice, bool) {
	res := t.feed(cd)
	delta := &chatMessageOut{}
	if res.Content != "" {
		delta.Content = ptr(res.Content)
	}
	if res.Reasoning != "" {
		delta.ReasoningContent = ptr(res.Reasoning)
	}
	for _, call := range res.Calls {
		if t.single && *calls > 0 {
			break
		}
		var o toolCallOut
		o.Index, o.ID, o.Type = ptr(*calls), call.ID, "function"
		o.Function.Name, o.Function.Arguments = call.Name, call.Arguments
		delta.ToolCalls = append(delta.ToolCalls, o)
		*calls++
	}
	ch := chatChoice{Index: cd.c.index, Delta: delta, Logprobs: s.chatLogprobs(job.req.Logprobs, cd.d.tokens)}
	if job.req.ReturnTokenIDs {
		for _, tok := range cd.d.tokens {
			ch.TokenIDs = append(ch.TokenIDs, tok.ID)
		}
	}
	if cd.d.finish != "" {
		ch.FinishReason, ch.StopReason = finishPtr(finishOf(cd.d.finish, *calls)), cd.c.stopReason
	}
	has := delta.Content != nil || delta.ReasoningContent != nil || len(delta.ToolCalls) > 0 || ch.Logprobs != nil || ch.TokenIDs != nil
	return ch, has
}

// collect runs every choice to its end and returns what each said.
func (t *turn) collect(r *http.Request, g *gen) ([]toolcall.Result, *apiError) {
	results := make([]toolcall.Result, len(g.choices))
	err := g.collect(r, func(cd choiceDelta) {
		i := cd.c.index
		results[i].Append(t.feed(cd))
		if cd.d.finish != "" {
			g.tm.finish(finishOf(cd.d.finish, len(results[i].Calls)))
		}
	})
	for i := range results {
		if t.single && len(results[i].Calls) > 1 {
			results[i].Calls = results[i].Calls[:1]
		}
	}
	return results, err
}

// collectChat is the whole chat.completion once every choice finished.
func (s *Server) collectChat(r *http.Request, job *chatJob, t *turn, g *gen, base chatResponse) (chatResponse, *apiError) {
	results, err := t.collect(r, g)
	if err != nil {
		return chatResponse{}, err
	}
	resp := base
	resp.Object, resp.Usage = "chat.completion", g.usage()
	resp.PromptLogprobs = s.promptLogprobs(&job.req.samplingFields, t.ids, g.choices[0].prompt)
	for _, c := range g.choices {
		res := results[c.index]
		msg := &chatMessage{Role: "assistant", Content: ptr(res.Content)}
		if res.Reasoning != "" {
			msg.ReasoningContent = ptr(res.Reasoning)
		}
		if res.Content == "" && (res.Reasoning != "" || len(res.Calls) > 0) {
			msg.Content = nil // as OpenAI and vLLM answer a call or only reasoning
		}
		if job.echo != "" {
			msg.Content = ptr(job.echo + res.Content)
		}
		for _, call := range res.Calls {
			var o toolCallOut
			o.ID, o.Type = call.ID, "function"
			o.Function.Name, o.Function.Arguments = call.Name, call.Arguments
			msg.ToolCalls = append(msg.ToolCalls, o)
		}
		ch := chatChoice{Index: c.index, Message: msg, Logprobs: s.chatLogprobs(job.req.Logprobs, c.tokens), FinishReason: finishPtr(finishOf(c.finish, len(res.Calls))), StopReason: c.stopReason}
		if job.req.ReturnTokenIDs {
			ch.TokenIDs = c.ids
		}
		resp.Choices = append(resp.Choices, ch)
	}
	return resp, nil
}
