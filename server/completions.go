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
// a list of lists of token ids; texts are the prompts as sent when they
// were text (nil for token ids).
func (s *Server) parsePrompt(raw json.RawMessage) (ids [][]int, texts []string, e *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("prompt", "prompt is required")
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
		return [][]int{ids}, []string{one}, check(ids)
	}
	var single []int
	if json.Unmarshal(raw, &single) == nil {
		return [][]int{single}, nil, check(single)
	}
	if json.Unmarshal(raw, &texts) == nil {
		if len(texts) == 0 {
			return nil, nil, badRequest("prompt", "prompt is an empty list")
		}
		for _, t := range texts {
			ids = append(ids, enc(t))
			if err := check(ids[len(ids)-1]); err != nil {
				return nil, nil, err
			}
		}
		return ids, texts, nil
	}
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return nil, nil, badRequest("prompt", "prompt is an empty list")
		}
		for _, l := range ids {
			if err := check(l); err != nil {
				return nil, nil, err
			}
		}
		return ids, nil, nil
	}
	return nil, nil, badRequest("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
}

// completionJob is a parsed completions request.
type completionJob struct {
	req     completionRequest
	p       sample.Params
	stops   []string
	prompts [][]int
	echo    []string // per prompt, when echo is set
	n       int
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	job, err := s.parseCompletion(w, r)
	if err != nil {
		return err
	}
	g, err := s.startCompletion(r, job, start)
	if err != nil {
		return err
	}
	base := completionResponse{ID: newID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(), Model: s.cfg.ModelName}
	s.cfg.Logger.Info("completion", "id", base.ID, "prompts", len(job.prompts), "n", job.n, "prompt_tokens", g.promptTokens, "stream", job.req.Stream)
	if job.req.Stream {
		s.streamCompletion(w, job, g, base)
		return nil
	}
	resp, err := s.collectCompletion(r, job, g, base)
	if err != nil {
		return err
	}
	writeJSON(w, 200, resp)
	return nil
}

// parseCompletion reads and checks a completions request.
func (s *Server) parseCompletion(w http.ResponseWriter, r *http.Request) (*completionJob, *apiError) {
	job := &completionJob{n: 1}
	req := &job.req
	if err := s.decode(w, r, req); err != nil {
		return nil, err
	}
	// echo with logprobs scores the prompt (vLLM's prompt logprobs, as
	// lm-evaluation-harness asks for them), and max_tokens 0 scores only.
	zero := req.MaxTokens != nil && *req.MaxTokens == 0
	req.echo, req.scorePrompt = req.Echo, req.Echo && (req.Logprobs != nil || zero)
	if req.Logprobs != nil {
		req.promptTop = *req.Logprobs
	}
	if err := s.common(&req.samplingFields); err != nil {
		return nil, err
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported")
	}
	if req.N != nil {
		job.n = *req.N
	}
	if req.BestOf != nil && *req.BestOf != job.n {
		return nil, badRequest("best_of", "best_of other than n is not supported")
	}
	var err *apiError
	if job.p, err = s.params(&req.samplingFields); err != nil {
		return nil, err
	}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 20 {
			return nil, badRequest("logprobs", "logprobs must be between 0 and 20, got %d", *req.Logprobs)
		}
		job.p.Logprobs, job.p.TopLogprobs = true, *req.Logprobs
	}
	if job.stops, err = parseStop(req.Stop); err != nil {
		return nil, err
	}
	var texts []string
	if job.prompts, texts, err = s.parsePrompt(req.Prompt); err != nil {
		return nil, err
	}
	for i, ids := range job.prompts {
		job.prompts[i] = s.truncate(req.TruncatePromptTokens, ids)
	}
	if req.Echo {
		if req.TruncatePromptTokens != nil {
			texts = nil // what remains is echoed
		}
		job.echo = s.echoTexts(job.prompts, texts)
	}
	return job, nil
}

// echoTexts is each prompt as echo returns it: the text as sent, or the
// token ids decoded when it came as ids (texts nil).
func (s *Server) echoTexts(prompts [][]int, texts []string) []string {
	if texts != nil {
		return texts
	}
	out := make([]string, len(prompts))
	for i, ids := range prompts {
		out[i] = s.tok.DecodeWith(ids, tokenizer.DecodeOptions{SkipSpecial: true})
	}
	return out
}

// startCompletion submits n choices for every prompt.
func (s *Server) startCompletion(r *http.Request, job *completionJob, start time.Time) (*gen, *apiError) {
	var choices []*choice
	promptTokens := 0
	for i, ids := range job.prompts {
		maxTok, err := s.maxTokens(&job.req.samplingFields, len(ids), "prompt")
		if err == nil {
			var cs []*choice
			cs, err = s.submit(r, ids, maxTok, job.p, &job.req.samplingFields, job.stops, i*job.n, job.n)
			choices = append(choices, cs...)
		}
		if err != nil {
			cancelAll(choices)
			return nil, err
		}
		promptTokens += len(ids)
	}
	return newGen(s.metrics, start, choices, promptTokens, job.n), nil
}

// completionLogprobs is the legacy logprobs object of tokens whose text
// starts at offset, nil when not asked for. With echo, the choice's first
// delta (first) begins with the prompt's tokens.
func (s *Server) completionLogprobs(job *completionJob, c *choice, toks []sample.Token, offset int, first bool) *completionLogprobs {
	if job.req.Logprobs == nil {
		return nil
	}
	lp := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []*float32{}, TopLogprobs: []topByText{}, TextOffset: []int{}}
	if first && job.echo != nil {
		ids := job.prompts[c.index/job.n]
		offset = lp.add(s, offset, ids[0], nil)
		for i := range c.prompt {
			t := c.prompt[i] // its alternatives may be more, for prompt_logprobs
			t.Top = t.Top[:min(len(t.Top), *job.req.Logprobs)]
			offset = lp.add(s, offset, ids[i+1], &t)
		}
	}
	for i := range toks {
		offset = lp.add(s, offset, toks[i].ID, &toks[i])
	}
	return lp
}

// add appends token id at offset, with its score t (nil: the prompt's
// first token, which has none), and returns the offset after it.
func (lp *completionLogprobs) add(s *Server, offset, id int, t *sample.Token) int {
	text := s.tokenText(id)
	lp.Tokens = append(lp.Tokens, text)
	lp.TextOffset = append(lp.TextOffset, offset)
	if t == nil {
		lp.TokenLogprobs = append(lp.TokenLogprobs, nil)
		lp.TopLogprobs = append(lp.TopLogprobs, nil)
		return offset + len(text)
	}
	lp.TokenLogprobs = append(lp.TokenLogprobs, ptr(wireLogprob(t.Logprob)))
	top := make(topByText, 0, len(t.Top)+1)
	chosen := false
	for _, tl := range t.Top {
		top = append(top, textLogprob{s.tokenText(tl.ID), wireLogprob(tl.Logprob)})
		chosen = chosen || tl.ID == id
	}
	if !chosen { // "up to logprobs+1 elements", as OpenAI documents
		top = append(top, textLogprob{text, wireLogprob(t.Logprob)})
	}
	lp.TopLogprobs = append(lp.TopLogprobs, top)
	return offset + len(text)
}

// streamCompletion sends text_completion events as the choices generate.
func (s *Server) streamCompletion(w http.ResponseWriter, job *completionJob, g *gen, base completionResponse) {
	out := newSSE(w)
	offsets := map[*choice]int{}
	sent := map[*choice]bool{}
	ok := g.stream(out.fail, func(cd choiceDelta) error {
		first := !sent[cd.c]
		if cd.d.text == "" && len(cd.d.tokens) == 0 && cd.d.finish == "" && !(first && job.echo != nil) {
			return nil
		}
		sent[cd.c] = true
		text := cd.d.text
		if first && job.echo != nil {
			text = job.echo[cd.c.index/job.n] + text
		}
		lp := s.completionLogprobs(job, cd.c, cd.d.tokens, offsets[cd.c], first)
		if lp != nil && len(lp.Tokens) > 0 {
			last := len(lp.Tokens) - 1
			offsets[cd.c] = lp.TextOffset[last] + len(lp.Tokens[last])
		}
		ch := completionChoice{Index: cd.c.index, Text: text, Logprobs: lp, FinishReason: finishPtr(cd.d.finish)}
		if cd.d.finish != "" {
			ch.StopReason = cd.c.stopReason
			g.tm.finish(cd.d.finish)
		}
		if job.req.ReturnTokenIDs {
			for _, t := range cd.d.tokens {
				ch.TokenIDs = append(ch.TokenIDs, t.ID)
			}
		}
		resp := base
		resp.Choices = []completionChoice{ch}
		return out.send(resp)
	})
	if !ok {
		return
	}
	if so := job.req.StreamOptions; so != nil && so.IncludeUsage {
		resp := base
		resp.Choices, resp.Usage = []completionChoice{}, g.usage()
		out.send(resp)
	}
	out.done()
}

// collectCompletion is the whole text_completion once every choice
// finished.
func (s *Server) collectCompletion(r *http.Request, job *completionJob, g *gen, base completionResponse) (completionResponse, *apiError) {
	texts := make([]string, len(g.choices))
	err := g.collect(r, func(cd choiceDelta) {
		texts[cd.c.index] += cd.d.text
		if cd.d.finish != "" {
			g.tm.finish(cd.d.finish)
		}
	})
	if err != nil {
		return completionResponse{}, err
	}
	resp := base
	resp.Usage = g.usage()
	for _, c := range g.choices {
		text := texts[c.index]
		if job.echo != nil {
			text = job.echo[c.index/job.n] + text
		}
		ids := job.prompts[c.index/job.n]
		ch := completionChoice{Index: c.index, Text: text, Logprobs: s.completionLogprobs(job, c, c.tokens, 0, true), FinishReason: finishPtr(c.finish), StopReason: c.stopReason,
			PromptLogprobs: s.promptLogprobs(&job.req.samplingFields, ids, c.prompt)}
		if job.req.ReturnTokenIDs {
			ch.TokenIDs = c.ids
			ch.PromptTokenIDs = ids
		}
		resp.Choices = append(resp.Choices, ch)
	}
	return resp, nil
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
