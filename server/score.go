package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/siskin-ml/siskin/tokenizer"
)

// vLLM's score and rerank APIs, answered as vLLM answers them for an
// embedding model: a score is the cosine similarity of the two texts'
// embeddings (the vectors /v1/embeddings returns).

type scoreRequest struct {
	Model                string          `json:"model"`
	Text1                json.RawMessage `json:"text_1"`
	Text2                json.RawMessage `json:"text_2"`
	TruncatePromptTokens *int            `json:"truncate_prompt_tokens"`
}

type scoreData struct {
	Index  int     `json:"index"`
	Object string  `json:"object"`
	Score  float64 `json:"score"`
}

type rerankRequest struct {
	Model                string          `json:"model"`
	Query                json.RawMessage `json:"query"`
	Documents            json.RawMessage `json:"documents"`
	TopN                 int             `json:"top_n"`
	TruncatePromptTokens *int            `json:"truncate_prompt_tokens"`
}

type rerankResult struct {
	Index          int                `json:"index"`
	Document       map[string]*string `json:"document"`
	RelevanceScore float64            `json:"relevance_score"`
}

// score is POST /score: text_1 against text_2, one to one (lists of the
// same length) or one to many (a single text_1).
func (s *Server) score(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	var req scoreRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	a, err := textList("text_1", req.Text1)
	if err != nil {
		return err
	}
	b, err := textList("text_2", req.Text2)
	if err != nil {
		return err
	}
	if len(a) != 1 && len(a) != len(b) {
		return badRequest("text_2", "text_1 has %d texts and text_2 %d: give one text_1, or as many as text_2", len(a), len(b))
	}
	sims, tokens, err := s.similarities(r, req.Model, req.TruncatePromptTokens, a, b, [2]string{"text_1", "text_2"}, start)
	if err != nil {
		return err
	}
	data := make([]scoreData, len(sims))
	for i, v := range sims {
		data[i] = scoreData{Index: i, Object: "score", Score: v}
	}
	writeJSON(w, 200, map[string]any{"id": newID("score-"), "object": "list", "created": time.Now().Unix(), "model": s.cfg.ModelName,
		"data": data, "usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
	return nil
}

// rerank is POST /rerank (and /v1, /v2): the documents ordered by their
// score against the query, the top_n best (all when 0).
func (s *Server) rerank(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	var req rerankRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	var query string
	if json.Unmarshal(req.Query, &query) != nil || query == "" {
		return badRequest("query", "query must be a non-empty string")
	}
	docs, err := documentList(req.Documents)
	if err != nil {
		return err
	}
	if req.TopN < 0 {
		return badRequest("top_n", "top_n must be at least 0 (0: every document), got %d", req.TopN)
	}
	sims, tokens, err := s.similarities(r, req.Model, req.TruncatePromptTokens, []string{query}, docs, [2]string{"query", "documents"}, start)
	if err != nil {
		return err
	}
	results := make([]rerankResult, len(docs))
	for i := range docs {
		results[i] = rerankResult{Index: i, Document: map[string]*string{"text": &docs[i]}, RelevanceScore: sims[i]}
	}
	slices.SortStableFunc(results, func(x, y rerankResult) int { return cmp.Compare(y.RelevanceScore, x.RelevanceScore) })
	if req.TopN > 0 && req.TopN < len(results) {
		results = results[:req.TopN]
	}
	writeJSON(w, 200, map[string]any{"id": newID("rerank-"), "model": s.cfg.ModelName, "results": results,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
	return nil
}

// similarities embeds a and b (the request's fields named) and returns
// the cosine similarity of each b with its a (the one a when there is
// one), and the tokens read.
func (s *Server) similarities(r *http.Request, model string, truncate *int, a, b []string, fields [2]string, start time.Time) ([]float64, int, *apiError) {
	if err := s.checkModel(model); err != nil {
		return nil, 0, err
	}
	if err := s.checkTruncate(truncate); err != nil {
		return nil, 0, err
	}
	if s.draining.Load() {
		return nil, 0, &apiError{Status: 503, Message: "server is shutting down", Type: "unavailable"}
	}
	texts := append(slices.Clone(a), b...)
	inputs := make([][]int, len(texts))
	tokens := 0
	for i, t := range texts {
		ids := s.truncate(truncate, s.tok.Encode(t, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}))
		if len(ids) > s.cfg.MaxModelLen {
			f := fields[min(i/len(a), 1)]
			return nil, 0, badRequest(f, "this model's maximum context length is %d tokens, but a text of %s has %d tokens", s.cfg.MaxModelLen, f, len(ids))
		}
		inputs[i], tokens = ids, tokens+len(ids)
	}
	tm := newTimer(s.metrics, start)
	defer tm.end()
	vecs, err := s.embedAll(r, inputs, tm)
	if err != nil {
		return nil, 0, err
	}
	sims := make([]float64, len(b))
	for i := range b {
		sims[i] = dot(vecs[min(i, len(a)-1)], vecs[len(a)+i])
	}
	return sims, tokens, nil
}

// dot of two unit vectors: their cosine similarity.
func dot(x, y []float32) float64 {
	var sum float64
	for i := range x {
		sum += float64(x[i]) * float64(y[i])
	}
	return sum
}

// textList reads a string or a non-empty list of non-empty strings.
func textList(field string, raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, badRequest(field, "%s must not be empty", field)
		}
		return []string{one}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, badRequest(field, "%s must be a string or a non-empty list of strings", field)
	}
	if slices.Contains(list, "") {
		return nil, badRequest(field, "%s must not contain empty strings", field)
	}
	return list, nil
}

// documentList reads rerank's documents: strings, or {"text": ...} objects
// as Cohere's API also takes them.
func documentList(raw json.RawMessage) ([]string, *apiError) {
	var objs []struct {
		Text *string `json:"text"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[{")) && json.Unmarshal(raw, &objs) == nil {
		docs := make([]string, len(objs))
		for i, o := range objs {
			if o.Text == nil || *o.Text == "" {
				return nil, badRequest("documents", "documents[%d].text must be a non-empty string", i)
			}
			docs[i] = *o.Text
		}
		return docs, nil
	}
	var docs []string
	if json.Unmarshal(raw, &docs) != nil || len(docs) == 0 {
		return nil, badRequest("documents", "documents must be a non-empty list of strings or of {\"text\"} objects")
	}
	if slices.Contains(docs, "") {
		return nil, badRequest("documents", "documents must not contain empty strings")
	}
	return docs, nil
}
