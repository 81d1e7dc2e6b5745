package server

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/siskin-ml/siskin/chat/toolcall"
)

// anthropicHandler is apiHandler for the Messages route: it writes the
// error in Anthropic's shape.
type anthropicHandler func(http.ResponseWriter, *http.Request) *apiError

func (h anthropicHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil && err != errGone {
		if err.Status == 429 || err.Status == 503 {
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, err.Status, anthropicError(err))
	}
}

// anthropicError is Anthropic's error body: {"type": "error", "error":
// {"type", "message"}}. It has no param field, so the message starts
// with the field's path, as Anthropic's own messages do.
func anthropicError(e *apiError) map[string]any {
	typ := "api_error"
	switch e.Status {
	case 400:
		typ = "invalid_request_error"
	case 401:
		typ = "authentication_error"
	case 404:
		typ = "not_found_error"
	case 413:
		typ = "request_too_large"
	case 429:
		typ = "rate_limit_error"
	case 503:
		typ = "overloaded_error"
	}
	msg := e.Message
	if p, ok := e.Param.(string); ok && p != "" && !strings.HasPrefix(msg, p+":") {
		msg = p + ": " + msg
	}
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}

// anthropicAuth checks the API key as Anthropic's clients send it, in
// x-api-key, or as a Bearer token.
func (s *Server) anthropicAuth(next http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	key, bearer := []byte(s.cfg.APIKey), []byte("Bearer "+s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("x-api-key")), key) != 1 &&
			subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), bearer) != 1 {
			writeJSON(w, 401, anthropicError(&apiError{Status: 401, Message: "invalid or missing API key: send x-api-key: <key> or Authorization: Bearer <key>"}))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// messageOutput builds a message's content blocks and, when streaming,
// sends content_block_start, content_block_delta (text_delta,
// thinking_delta, input_json_delta) and content_block_stop.
type messageOutput struct {
	content []map[string]any
	emit    func(typ string, ev map[string]any) error // nil when not streaming
}

func (o *messageOutput) send(typ string, ev map[string]any) error {
	if o.emit == nil {
		return nil
	}
	return o.emit(typ, ev)
}

func (o *messageOutput) open(kind blockKind, call *toolcall.Call) error {
	var b map[string]any
	switch kind {
	case blockReasoning:
		b = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	case blockCall:
		b = map[string]any{"type": "tool_use", "id": newID("toolu_"), "name": call.Name, "input": json.RawMessage("{}")}
	default:
		b = map[string]any{"type": "text", "text": "", "citations": nil}
	}
	o.content = append(o.content, b)
	return o.send("content_block_start", map[string]any{"index": len(o.content) - 1, "content_block": b})
}

func (o *messageOutput) delta(text string) error {
	b := o.content[len(o.content)-1]
	var d map[string]any
	switch b["type"] {
	case "thinking":
		b["thinking"] = b["thinking"].(string) + text
		d = map[string]any{"type": "thinking_delta", "thinking": text}
	case "tool_use":
		b["input"] = json.RawMessage(text) // a call arrives whole
		d = map[string]any{"type": "input_json_delta", "partial_json": text}
	default:
		b["text"] = b["text"].(string) + text
		d = map[string]any{"type": "text_delta", "text": text}
	}
	return o.send("content_block_delta", map[string]any{"index": len(o.content) - 1, "delta": d})
}

func (o *messageOutput) close() error {
	return o.send("content_block_stop", map[string]any{"index": len(o.content) - 1})
}

// anthropicStop is stop_reason and stop_sequence of a finished choice.
func anthropicStop(c *choice, calls int) (string, any) {
	switch {
	case c.finish == "length":
		return "max_tokens", nil
	case calls > 0:
		return "tool_use", nil
	}
	if s, ok := c.stopReason.(string); ok {
		return "stop_sequence", s
	}
	return "end_turn", nil
}

// countTokens is Anthropic's POST /v1/messages/count_tokens: the input
// tokens a Messages request with the same system, messages, tools and
// thinking would read.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) *apiError {
	job, err := s.parseMessagesRequest(w, r, true)
	if err != nil {
		return err
	}
	t, err := s.render(job.conv, "messages")
	if err != nil {
		return err
	}
	writeJSON(w, 200, map[string]int{"input_tokens": len(t.ids)})
	return nil
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	job, err := s.parseMessagesRequest(w, r, false)
	if err != nil {
		return err
	}
	t, err := s.render(job.conv, "messages")
	if err != nil {
		return err
	}
	g, err := s.startTurn(r, t, &job.f, job.p, job.stops, "messages", start)
	if err != nil {
		return err
	}
	msg := map[string]any{"id": newID("msg_"), "type": "message", "role": "assistant", "model": s.cfg.ModelName, "content": []any{}, "stop_reason": nil, "stop_sequence": nil}
	s.cfg.Logger.Info("messages", "id", msg["id"], "prompt_tokens", len(t.ids), "tools", len(t.tools), "stream", job.req.Stream)
	if job.req.Stream {
		s.streamMessage(w, t, g, msg)
		return nil
	}
	out := &messageOutput{}
	b := &blocks{sink: out, single: t.single}
	if err := g.collect(r, func(cd choiceDelta) { s.responseDelta(t, g, b, cd) }); err != nil {
		return err
	}
	b.end()
	msg["content"] = out.content
	if out.content == nil {
		msg["content"] = []any{}
	}
	msg["stop_reason"], msg["stop_sequence"] = anthropicStop(g.choices[0], b.calls)
	msg["usage"] = messageUsage(g)
	writeJSON(w, 200, msg)
	return nil
}

// messageUsage counts tokens as Anthropic does: input_tokens are those
// not read from the (prefix) cache.
func messageUsage(g *gen) map[string]any {
	u := g.usage()
	cached := u.PromptTokensDetails.CachedTokens
	return map[string]any{"input_tokens": u.PromptTokens - cached, "output_tokens": u.CompletionTokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached}
}

// streamMessage sends Anthropic's event sequence: message_start, the
// content blocks' events, message_delta (stop_reason, usage) and
// message_stop.
func (s *Server) streamMessage(w http.ResponseWriter, t *turn, g *gen, msg map[string]any) {
	out := newSSE(w)
	emit := func(typ string, ev map[string]any) error {
		ev["type"] = typ
		return out.event(typ, ev)
	}
	msg["usage"] = map[string]any{"input_tokens": g.promptTokens, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	emit("message_start", map[string]any{"message": msg})
	o := &messageOutput{emit: emit}
	b := &blocks{sink: o, single: t.single}
	fail := func(e *apiError) { emit("error", anthropicError(e)) }
	if !g.stream(fail, func(cd choiceDelta) error { return s.responseDelta(t, g, b, cd) }) {
		return
	}
	if b.end() != nil {
		return
	}
	why, seq := anthropicStop(g.choices[0], b.calls)
	emit("message_delta", map[string]any{"delta": map[string]any{"stop_reason": why, "stop_sequence": seq}, "usage": messageUsage(g)})
	emit("message_stop", map[string]any{})
}
