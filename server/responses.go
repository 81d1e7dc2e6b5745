package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/siskin-ml/siskin/chat/toolcall"
	"github.com/siskin-ml/siskin/sample"
)

// responseObject is a Responses API response.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *apiError          `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          responseReason     `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               map[string]any     `json:"text"`
	ToolChoice         any                `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	TopLogprobs        *int               `json:"top_logprobs,omitempty"`
	Usage              *responseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// outItem is one output item as it grows.
type outItem struct {
	kind blockKind
	id   string
	text string // the text, the reasoning or the call's arguments
	call toolcall.Call
	done bool
	// logprobs are the text's tokens' (include message.output_text.logprobs).
	logprobs []chatLogprob
}

// json is the item as the API shows it: while it is open, without its
// content (output_item.added), as OpenAI sends it.
func (it *outItem) json() any {
	status := "in_progress"
	if it.done {
		status = "completed"
	}
	switch it.kind {
	case blockReasoning:
		content := []any{}
		if it.done {
			content = append(content, it.part())
		}
		return map[string]any{"type": "reasoning", "id": it.id, "summary": []any{}, "content": content, "status": status}
	case blockCall:
		args := ""
		if it.done {
			args = it.text
		}
		return map[string]any{"type": "function_call", "id": it.id, "call_id": it.call.ID, "name": it.call.Name, "arguments": args, "status": status}
	}
	content := []any{}
	if it.done {
		content = append(content, it.part())
	}
	return map[string]any{"type": "message", "id": it.id, "role": "assistant", "status": status, "content": content}
}

// part is the item's content part (text or reasoning).
func (it *outItem) part() map[string]any {
	if it.kind == blockReasoning {
		return map[string]any{"type": "reasoning_text", "text": it.text}
	}
	return map[string]any{"type": "output_text", "text": it.text, "annotations": []any{}, "logprobs": nonNil(it.logprobs)}
}

func nonNil(lp []chatLogprob) []chatLogprob {
	if lp == nil {
		return []chatLogprob{}
	}
	return lp
}

// responseOutput builds a response's output items from parsed blocks and,
// when streaming, sends the Responses events in their documented order:
// per item output_item.added, content_part.added (text and reasoning),
// the deltas, the .done events, output_item.done.
type responseOutput struct {
	items []*outItem
	emit  func(typ string, ev map[string]any) error // nil when not streaming
	// logprobs turns tokens into the API's logprobs, nil when not asked
	// for; pending holds the tokens whose text has not been placed yet.
	logprobs func([]sample.Token) []chatLogprob
	pending  []sample.Token
}

// queue holds a delta's tokens until its text lands: the first output
// text delta after them takes them, reasoning and call text drops them
// (so held-back text, a partial tag, keeps its tokens for later).
func (o *responseOutput) queue(toks []sample.Token) {
	if o.logprobs != nil {
		o.pending = append(o.pending, toks...)
	}
}

func (o *responseOutput) send(typ string, ev map[string]any) error {
	if o.emit == nil {
		return nil
	}
	return o.emit(typ, ev)
}

func (o *responseOutput) at(ev map[string]any) map[string]any {
	it := o.items[len(o.items)-1]
	ev["item_id"], ev["output_index"] = it.id, len(o.items)-1
	if it.kind != blockCall {
		ev["content_index"] = 0
	}
	return ev
}

func (o *responseOutput) open(kind blockKind, call *toolcall.Call) error {
	it := &outItem{kind: kind}
	switch kind {
	case blockReasoning:
		it.id = newID("rs_")
	case blockCall:
		it.id, it.call = newID("fc_"), *call
	default:
		it.id = newID("msg_")
	}
	o.items = append(o.items, it)
	if err := o.send("response.output_item.added", map[string]any{"output_index": len(o.items) - 1, "item": it.json()}); err != nil {
		return err
	}
	if kind == blockCall {
		return nil
	}
	part := it.part()
	return o.send("response.content_part.added", o.at(map[string]any{"part": part}))
}

func (o *responseOutput) delta(text string) error {
	it := o.items[len(o.items)-1]
	it.text += text
	var lp []chatLogprob
	if o.logprobs != nil && len(o.pending) > 0 {
		if it.kind == blockText {
			lp = o.logprobs(o.pending)
			it.logprobs = append(it.logprobs, lp...)
		}
		o.pending = o.pending[:0]
	}
	switch it.kind {
	case blockReasoning:
		return o.send("response.reasoning_text.delta", o.at(map[string]any{"delta": text}))
	case blockCall:
		return o.send("response.function_call_arguments.delta", o.at(map[string]any{"delta": text}))
	}
	return o.send("response.output_text.delta", o.at(map[string]any{"delta": text, "logprobs": nonNil(lp)}))
}

func (o *responseOutput) close() error {
	it := o.items[len(o.items)-1]
	it.done = true
	var err error
	switch it.kind {
	case blockReasoning:
		err = o.send("response.reasoning_text.done", o.at(map[string]any{"text": it.text}))
	case blockCall:
		err = o.send("response.function_call_arguments.done", o.at(map[string]any{"name": it.call.Name, "arguments": it.text}))
	default:
		err = o.send("response.output_text.done", o.at(map[string]any{"text": it.text, "logprobs": nonNil(it.logprobs)}))
	}
	if err == nil && it.kind != blockCall {
		err = o.send("response.content_part.done", o.at(map[string]any{"part": it.part()}))
	}
	if err != nil {
		return err
	}
	return o.send("response.output_item.done", map[string]any{"output_index": len(o.items) - 1, "item": it.json()})
}

// finish ends the output: an answer with neither text nor a call still
// gets its (empty) message.
func (o *responseOutput) finish(b *blocks) error {
	if err := b.end(); err != nil {
		return err
	}
	if b.calls == 0 && !o.has(blockText) {
		if err := o.open(blockText, nil); err != nil {
			return err
		}
		return o.close()
	}
	return nil
}

func (o *responseOutput) has(k blockKind) bool {
	for _, it := range o.items {
		if it.kind == k {
			return true
		}
	}
	return false
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	job, err := s.parseResponses(w, r)
	if err != nil {
		return err
	}
	t, err := s.render(job.conv, "input")
	if err != nil {
		return err
	}
	g, err := s.startTurn(r, t, &job.f, job.p, nil, "input", start)
	if err != nil {
		return err
	}
	resp := s.responseBase(job)
	s.cfg.Logger.Info("responses", "id", resp.ID, "prompt_tokens", len(t.ids), "tools", len(t.tools), "stream", job.req.Stream)
	var logprobs func([]sample.Token) []chatLogprob
	if job.p.Logprobs {
		logprobs = func(toks []sample.Token) []chatLogprob { return s.chatLogprobs(true, toks).Content }
	}
	if job.req.Stream {
		s.streamResponse(w, t, g, resp, logprobs)
		return nil
	}
	out := &responseOutput{logprobs: logprobs}
	b := &blocks{sink: out, single: t.single}
	if err := g.collect(r, func(cd choiceDelta) { out.queue(cd.d.tokens); s.responseDelta(t, g, b, cd) }); err != nil {
		return err
	}
	out.finish(b)
	writeJSON(w, 200, completeResponse(resp, out, g))
	return nil
}

// responseDelta feeds one delta to the blocks and counts a finish.
func (s *Server) responseDelta(t *turn, g *gen, b *blocks, cd choiceDelta) error {
	err := b.add(t.feed(cd))
	if cd.d.finish != "" {
		g.tm.finish(finishOf(cd.d.finish, b.calls))
	}
	return err
}

// streamResponse sends the Responses events: response.created and
// response.in_progress, the items' events, then response.completed (or
// response.incomplete when max_output_tokens cut the answer).
func (s *Server) streamResponse(w http.ResponseWriter, t *turn, g *gen, resp *responseObject, logprobs func([]sample.Token) []chatLogprob) {
	out := newSSE(w)
	seq := 0
	emit := func(typ string, ev map[string]any) error {
		ev["type"], ev["sequence_number"] = typ, seq
		seq++
		return out.event(typ, ev)
	}
	resp.Status = "in_progress"
	emit("response.created", map[string]any{"response": resp})
	emit("response.in_progress", map[string]any{"response": resp})
	o := &responseOutput{emit: emit, logprobs: logprobs}
	b := &blocks{sink: o, single: t.single}
	fail := func(e *apiError) {
		emit("error", map[string]any{"code": "server_error", "message": e.Message, "param": nil})
	}
	if !g.stream(fail, func(cd choiceDelta) error { o.queue(cd.d.tokens); return s.responseDelta(t, g, b, cd) }) {
		return
	}
	if o.finish(b) != nil {
		return
	}
	final := completeResponse(resp, o, g)
	emit("response."+final.Status, map[string]any{"response": final})
}

// responseBase is the response as response.created shows it.
func (s *Server) responseBase(job *responsesJob) *responseObject {
	req := &job.req
	resp := &responseObject{
		ID: newID("resp_"), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: s.cfg.ModelName,
		Output: []any{}, ParallelToolCalls: !job.conv.single, Temperature: job.p.Temperature, TopP: job.p.TopP,
		Text: map[string]any{"format": map[string]string{"type": "text"}}, ToolChoice: job.conv.tc.mode,
		Tools: []json.RawMessage{}, Truncation: "disabled", User: req.User, Metadata: req.Metadata, TopLogprobs: req.TopLogprobs,
	}
	if req.Reasoning != nil {
		resp.Reasoning = *req.Reasoning
	}
	if job.conv.tc.mode == "named" {
		resp.ToolChoice = map[string]string{"type": "function", "name": job.conv.tc.name}
	}
	for _, t := range req.Tools {
		resp.Tools = append(resp.Tools, t)
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	return resp
}

// completeResponse is the finished response: its output, status and usage.
func completeResponse(base *responseObject, o *responseOutput, g *gen) *responseObject {
	resp := *base
	now := time.Now().Unix()
	resp.CompletedAt, resp.Status = &now, "completed"
	if g.choices[0].finish == "length" {
		resp.Status, resp.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	}
	resp.Output = make([]any, len(o.items))
	for i, it := range o.items {
		resp.Output[i] = it.json()
	}
	u := g.usage()
	resp.Usage = &responseUsage{
		InputTokens: u.PromptTokens, InputTokensDetails: map[string]int{"cached_tokens": u.PromptTokensDetails.CachedTokens, "cache_write_tokens": 0},
		OutputTokens: u.CompletionTokens, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens: u.TotalTokens,
	}
	return &resp
}
