package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/tokenizer"
)

// parsePrompt accepts a string, a list of strings, a list of token ids or
// a list of lists of token ids.
func (s *Server) parsePrompt(raw json.RawMessage) ([][]int, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is required")
	}
	vocab := s.eng.Model().Config().Vocab
	check := func(ids []int) *apiError {
		if len(ids) == 0 {
			return badRequest("prompt", "prompt is empty")
		}
		for _, id := range ids {
			if id < 0 || id >= vocab {
				return badRequest("prompt", "prompt token id %d is outside the vocabulary [0, %d)", id, vocab)
			}
		}
		return nil
	}
	enc := func(text string) []int {
		return s.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		ids := enc(one)
		return [][]int{ids}, check(ids)
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return [][]int{ids}, check(ids)
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) == 0 {
			return nil, badRequest("prompt", "prompt is an empty list")
		}
		var out [][]int
		for _, t := range texts {
			ids := enc(t)
			if err := check(ids); err != nil {
				return nil, err
			}
			out = append(out, ids)
		}
		return out, nil
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil {
		if len(lists) == 0 {
			return nil, badRequest("prompt", "prompt is an empty list")
		}
		for _, l := range lists {
			if err := check(l); err != nil {
				return nil, err
			}
		}
		return lists, nil
	}
	return nil, badRequest("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req completionRequest
	if err := s.decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.common(&req.samplingFields); err != nil {
		writeError(w, err)
		return
	}
	if req.Echo {
		writeError(w, badRequest("echo", "echo is not supported"))
		return
	}
	if req.Suffix != nil && *req.Suffix != "" {
		writeError(w, badRequest("suffix", "suffix is not supported"))
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if req.BestOf != nil && *req.BestOf != n {
		writeError(w, badRequest("best_of", "best_of other than n is not supported"))
		return
	}
	p, perr := s.params(&req.samplingFields)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 20 {
			writeError(w, badRequest("logprobs", "logprobs must be between 0 and 20, got %d", *req.Logprobs))
			return
		}
		p.Logprobs, p.TopLogprobs = true, *req.Logprobs
	}
	stops, serr := parseStop(req.Stop)
	if serr != nil {
		writeError(w, serr)
		return
	}
	prompts, perr2 := s.parsePrompt(req.Prompt)
	if perr2 != nil {
		writeError(w, perr2)
		return
	}
	var choices []*choice
	promptTokens := 0
	for i, ids := range prompts {
		maxTok, merr := s.maxTokens(&req.samplingFields, len(ids), "prompt")
		if merr == nil {
			var cs []*choice
			cs, merr = s.submit(r, ids, maxTok, p, &req.samplingFields, stops, i*n, n)
			choices = append(choices, cs...)
		}
		if merr != nil {
			cancelAll(choices)
			writeError(w, merr)
			return
		}
		promptTokens += len(ids)
	}
	id := newID("cmpl-")
	created := time.Now().Unix()
	events := pump(choices)
	s.cfg.Logger.Info("completion", "id", id, "prompts", len(prompts), "n", n, "prompt_tokens", promptTokens, "stream", req.Stream)

	logprobsOf := func(c *choice, toks []sample.Token, offset int) *completionLogprobs {
		if req.Logprobs == nil {
			return nil
		}
		lp := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
		for _, t := range toks {
			text := s.tokenText(t.ID)
			lp.Tokens = append(lp.Tokens, text)
			lp.TokenLogprobs = append(lp.TokenLogprobs, t.Logprob)
			top := map[string]float32{}
			for _, tl := range t.Top {
				top[s.tokenText(tl.ID)] = tl.Logprob
			}
			lp.TopLogprobs = append(lp.TopLogprobs, top)
			lp.TextOffset = append(lp.TextOffset, offset)
			offset += len(text)
		}
		return lp
	}
	tm := newTimer(s.metrics, start)
	if req.Stream {
		out := newSSE(w)
		offsets := map[*choice]int{}
		for cd := range events {
			if cd.d.finish == "abort" {
				streamAborted(out, cd.c, events, choices)
				return
			}
			tm.token(cd.c, len(cd.d.tokens))
			if cd.d.text == "" && len(cd.d.tokens) == 0 && cd.d.finish == "" {
				continue
			}
			ch := completionChoice{Index: cd.c.index, Text: cd.d.text, Logprobs: logprobsOf(cd.c, cd.d.tokens, offsets[cd.c]), FinishReason: finishPtr(cd.d.finish)}
			offsets[cd.c] += len(cd.d.text)
			if cd.d.finish != "" {
				ch.StopReason = cd.c.stopReason
				tm.finish(cd.d.finish)
			}
			if req.ReturnTokenIDs {
				for _, t := range cd.d.tokens {
					ch.TokenIDs = append(ch.TokenIDs, t.ID)
				}
			}
			if err := out.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.ModelName, Choices: []completionChoice{ch}}); err != nil {
				drain(events, choices)
				return
			}
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			out.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.ModelName, Choices: []completionChoice{}, Usage: usageOf(choices, promptTokens, n)})
		}
		tm.end()
		out.done()
		return
	}
	texts := make([]string, len(choices))
	for cd := range events {
		tm.token(cd.c, len(cd.d.tokens))
		texts[cd.c.index] += cd.d.text
		if cd.d.finish != "" {
			tm.finish(cd.d.finish)
		}
	}
	tm.end()
	if r.Context().Err() != nil {
		return // the client is gone
	}
	resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.ModelName, Usage: usageOf(choices, promptTokens, n)}
	for _, c := range choices {
		if c.err != nil {
			writeError(w, &apiError{Status: 500, Message: c.err.Error(), Type: "internal_error"})
			return
		}
		ch := completionChoice{Index: c.index, Text: texts[c.index], Logprobs: logprobsOf(c, c.tokens, 0), FinishReason: finishPtr(c.finish), StopReason: c.stopReason}
		if req.ReturnTokenIDs {
			ch.TokenIDs = c.ids
			ch.PromptTokenIDs = prompts[c.index/n]
		}
		resp.Choices = append(resp.Choices, ch)
	}
	writeJSON(w, 200, resp)
}

// usageOf counts tokens over all choices. As in vLLM and OpenAI, a
// prompt counts once however many choices (n) it has; its cached tokens
// are those of its choice that found the most in the prefix cache (the
// choices run concurrently, so which one found them first varies).
func usageOf(cs []*choice, promptTokens, n int) *usage {
	u := &usage{PromptTokens: promptTokens}
	best := map[int]int{}
	for _, c := range cs {
		u.CompletionTokens += len(c.ids)
		best[c.index/n] = max(best[c.index/n], c.cached)
	}
	cached := 0
	for _, b := range best {
		cached += b
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails = &promptDetail{CachedTokens: cached}
	return u
}

// streamAborted ends a stream whose choice c was aborted: silently when
// the client is gone, with an error event (as vLLM sends) when the engine
// failed. The other choices are cancelled.
func streamAborted(out *sse, c *choice, events <-chan choiceDelta, cs []*choice) {
	drain(events, cs)
	if c.err != nil {
		out.fail(&apiError{Status: 500, Message: c.err.Error(), Type: "internal_error"})
	}
}

// timer records latency metrics for one request.
type timer struct {
	m     *metrics
	start time.Time
	last  map[*choice]time.Time
}

func newTimer(m *metrics, start time.Time) *timer {
	return &timer{m: m, start: start, last: map[*choice]time.Time{}}
}

func (t *timer) token(c *choice, n int) {
	if n == 0 {
		return
	}
	now := time.Now()
	if prev, ok := t.last[c]; ok {
		t.m.itl.Observe(now.Sub(prev).Seconds())
	} else {
		t.m.ttft.Observe(now.Sub(t.start).Seconds())
	}
	t.last[c] = now
}

func (t *timer) finish(why string) {
	if why != "abort" { // a failed or abandoned request is no success
		t.m.success.WithLabelValues(why).Inc()
	}
}

func (t *timer) end() { t.m.e2e.Observe(time.Since(t.start).Seconds()) }
