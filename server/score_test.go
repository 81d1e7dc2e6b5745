package server

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// /score and /rerank answer with the cosine similarities of the
// /v1/embeddings vectors (computed here in float64 from them; tolerance
// 1e-6, float32 vectors summed in another order), one to many and one to
// one, the rerank results best first with their documents, top_n cut, and
// documents given as {"text"} objects on every path.
func TestScoreAndRerank(t *testing.T) {
	ts := stories(t)
	texts := []string{"Once upon a time", "a little girl", "the big red truck", "Once upon a time there was"}
	code, raw := ts.post(t, "/v1/embeddings", map[string]any{"input": texts})
	var e struct {
		Data  []struct{ Embedding []float64 }
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.Unmarshal(raw, &e); code != 200 || err != nil {
		t.Fatalf("embeddings: %d %v %s", code, err, raw)
	}
	cos := func(i, j int) float64 {
		var s float64
		for k := range e.Data[i].Embedding {
			s += e.Data[i].Embedding[k] * e.Data[j].Embedding[k]
		}
		return s
	}
	type scored struct {
		Data []struct {
			Index  int
			Object string
			Score  float64
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	code, raw = ts.post(t, "/score", map[string]any{"text_1": texts[0], "text_2": texts[1:]})
	var s scored
	if err := json.Unmarshal(raw, &s); code != 200 || err != nil || len(s.Data) != 3 || s.Usage.PromptTokens != e.Usage.PromptTokens {
		t.Fatalf("score: %d %v %s", code, err, raw)
	}
	for i, d := range s.Data {
		if d.Index != i || d.Object != "score" || math.Abs(d.Score-cos(0, i+1)) > 1e-6 {
			t.Errorf("score %d: %+v, want %v", i, d, cos(0, i+1))
		}
	}
	code, raw = ts.post(t, "/v1/score", map[string]any{"text_1": texts[:2], "text_2": texts[2:]})
	s = scored{}
	if err := json.Unmarshal(raw, &s); code != 200 || err != nil || len(s.Data) != 2 ||
		math.Abs(s.Data[0].Score-cos(0, 2)) > 1e-6 || math.Abs(s.Data[1].Score-cos(1, 3)) > 1e-6 {
		t.Errorf("pairs: %d %v %s", code, err, raw)
	}

	type reranked struct {
		Results []struct {
			Index          int
			Document       struct{ Text string }
			RelevanceScore float64 `json:"relevance_score"`
		}
	}
	for _, path := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
		for _, docs := range []any{texts[1:], []map[string]string{{"text": texts[1]}, {"text": texts[2]}, {"text": texts[3]}}} {
			code, raw = ts.post(t, path, map[string]any{"query": texts[0], "documents": docs, "top_n": 2})
			var r reranked
			if err := json.Unmarshal(raw, &r); code != 200 || err != nil || len(r.Results) != 2 {
				t.Fatalf("%s: %d %v %s", path, code, err, raw)
			}
			want := []int{0, 1, 2} // the documents by their cosine, best first
			slices.SortStableFunc(want, func(i, j int) int { return cmp.Compare(cos(0, j+1), cos(0, i+1)) })
			for k, res := range r.Results {
				if res.Index != want[k] || res.Document.Text != texts[res.Index+1] || math.Abs(res.RelevanceScore-cos(0, res.Index+1)) > 1e-6 {
					t.Errorf("%s: result %d is %+v, want document %d", path, k, res, want[k])
				}
			}
		}
	}

	for _, c := range []struct {
		path  string
		body  map[string]any
		param string
	}{
		{"/score", map[string]any{"text_1": []string{"a", "b"}, "text_2": []string{"a", "b", "c"}}, "text_2"},
		{"/score", map[string]any{"text_1": "", "text_2": "a"}, "text_1"},
		{"/score", map[string]any{"text_1": "a", "text_2": []string{}}, "text_2"},
		{"/score", map[string]any{"text_1": "a", "text_2": "b", "truncate_prompt_tokens": 0}, "truncate_prompt_tokens"},
		{"/rerank", map[string]any{"query": "", "documents": []string{"a"}}, "query"},
		{"/rerank", map[string]any{"query": "a", "documents": []string{}}, "documents"},
		{"/rerank", map[string]any{"query": "a", "documents": []map[string]any{{"title": "x"}}}, "documents"},
		{"/rerank", map[string]any{"query": "a", "documents": []string{"b"}, "top_n": -1}, "top_n"},
		{"/rerank", map[string]any{"query": "a", "documents": []string{"b"}, "model": "other"}, "model"},
	} {
		code, body := ts.post(t, c.path, c.body)
		if e := errorBody(t, body); code/100 != 4 || e.Param != c.param {
			t.Errorf("%s %v: %d, param %v (want %s): %s", c.path, c.body, code, e.Param, c.param, body)
		}
	}
}

func FuzzScoreRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 64}}, qwen3HF...)
	h := s.Handler()
	for _, seed := range []string{
		`{"text_1": "hi", "text_2": ["a", "b"]}`,
		`{"text_1": ["a", "b"], "text_2": ["c", "d"], "truncate_prompt_tokens": 4}`,
		`{"model": "test-model", "text_1": "x", "text_2": "y"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzNamed(t, h, "/score", body) })
}

func FuzzRerankRequest(f *testing.F) {
	s, _, _ := newServer(f, setup{cfg: Config{MaxModelLen: 64}}, qwen3HF...)
	h := s.Handler()
	for _, seed := range []string{
		`{"query": "hi", "documents": ["a", "b"], "top_n": 1}`,
		`{"query": "hi", "documents": [{"text": "a"}, {"text": "b"}]}`,
		`{"model": "test-model", "query": "x", "documents": ["y"], "truncate_prompt_tokens": -1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzNamed(t, h, "/rerank", body) })
}
