package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/siskin-ml/siskin/engine"
)

// embeddingsRequest is POST /v1/embeddings.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
	// TruncatePromptTokens keeps each input's last k tokens (vLLM's).
	TruncatePromptTokens *int `json:"truncate_prompt_tokens"`
}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type embeddingsResponse struct {
	Object string      `json:"object"`
	Data   []embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// PoolingFromDir reads the pooling of a sentence-transformers model
// folder (1_Pooling/config.json): "mean" or "last", or "" when the folder
// does not say (then the server pools the last token).
func PoolingFromDir(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "1_Pooling", "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		Mean bool `json:"pooling_mode_mean_tokens"`
		Last bool `json:"pooling_mode_lasttoken"`
	}
	json.Unmarshal(raw, &cfg)
	switch {
	case cfg.Mean:
		return "mean"
	case cfg.Last:
		return "last"
	}
	return ""
}

// embeddings is POST /v1/embeddings: each input's final hidden state,
// pooled (Config.Pooling: the last token unless the model says mean) and
// L2-normalized. The prompts run through the engine like any prefill, in
// chunks batched with generation.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) *apiError {
	start := time.Now()
	var req embeddingsRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	inputs, err := s.parseEmbeddingInput(&req)
	if err != nil {
		return err
	}
	tm := newTimer(s.metrics, start)
	vecs, err := s.embedAll(r, inputs, tm)
	if err != nil {
		return err
	}
	resp := embeddingsResponse{Object: "list", Model: s.cfg.ModelName, Data: make([]embedding, len(inputs))}
	for i, vec := range vecs {
		resp.Data[i] = embedding{Object: "embedding", Index: i, Embedding: vec}
		if req.EncodingFormat == "base64" {
			resp.Data[i].Embedding = base64Floats(vec)
		}
		resp.Usage.PromptTokens += len(inputs[i])
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	tm.end()
	writeJSON(w, 200, resp)
	return nil
}

// embedAll runs every input through the engine at once and returns its
// final hidden state, pooled (Config.Pooling: the last token unless the
// model says mean) and L2-normalized.
func (s *Server) embedAll(r *http.Request, inputs [][]int, tm *timer) ([][]float32, *apiError) {
	pool := engine.PoolLast
	if s.cfg.Pooling == "mean" {
		pool = engine.PoolMean
	}
	events := make([]<-chan engine.Event, len(inputs))
	for i, ids := range inputs {
		var err *apiError
		if events[i], err = s.submitEmbed(r, ids, pool); err != nil {
			return nil, err
		}
	}
	vecs := make([][]float32, len(inputs))
	for i, ch := range events {
		ev, ok := <-ch
		if !ok || r.Context().Err() != nil {
			return nil, errGone
		}
		if ev.Err != nil {
			return nil, internalError(ev.Err)
		}
		raw, isVec := ev.Data.([]float32)
		if !isVec {
			return nil, internalError(errors.New("embedding request ended without a vector"))
		}
		vecs[i] = normalize(raw)
		tm.finish("stop")
	}
	return vecs, nil
}

// parseEmbeddingInput checks the request and returns each input's ids.
func (s *Server) parseEmbeddingInput(req *embeddingsRequest) ([][]int, *apiError) {
	if err := s.checkModel(req.Model); err != nil {
		return nil, err
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		return nil, badRequest("encoding_format", "encoding_format must be \"float\" or \"base64\", got %q", req.EncodingFormat)
	}
	if d := s.eng.Model().Config().Hidden; req.Dimensions != nil && *req.Dimensions != d {
		return nil, badRequest("dimensions", "dimensions %d is not supported: this model's embeddings have %d dimensions", *req.Dimensions, d)
	}
	if s.draining.Load() {
		return nil, &apiError{Status: 503, Message: "server is shutting down", Type: "unavailable"}
	}
	in := bytes.TrimSpace(req.Input)
	var one string
	if json.Unmarshal(in, &one) == nil && one == "" {
		return nil, badRequest("input", "input must not be an empty string")
	}
	var texts []string
	if json.Unmarshal(in, &texts) == nil {
		for _, t := range texts {
			if t == "" {
				return nil, badRequest("input", "input must not contain empty strings")
			}
		}
	}
	inputs, _, err := s.parsePrompt(in)
	if err != nil {
		err.Param = "input"
		err.Message = "input: " + err.Message
		return nil, err
	}
	if err := s.checkTruncate(req.TruncatePromptTokens); err != nil {
		return nil, err
	}
	for i, ids := range inputs {
		ids = s.truncate(req.TruncatePromptTokens, ids)
		inputs[i] = ids
		if len(ids) > s.cfg.MaxModelLen {
			return nil, badRequest("input", "this model's maximum context length is %d tokens, but an input has %d tokens", s.cfg.MaxModelLen, len(ids))
		}
	}
	return inputs, nil
}

// submitEmbed starts one input's embedding request.
func (s *Server) submitEmbed(r *http.Request, ids []int, pool engine.Pooling) (<-chan engine.Event, *apiError) {
	events, err := s.eng.Submit(r.Context(), engine.Request{Prompt: ids, Embed: pool})
	switch {
	case err == nil:
		return events, nil
	case errors.Is(err, engine.ErrQueueFull):
		return nil, &apiError{Status: 429, Message: "too many requests are waiting; retry later", Type: "rate_limit_error"}
	case errors.Is(err, engine.ErrTooLarge):
		return nil, badRequest("input", "%v", err)
	}
	return nil, &apiError{Status: 503, Message: err.Error(), Type: "unavailable"}
}

// normalize scales v to unit L2 norm (a zero vector stays zero).
func normalize(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss > 0 {
		inv := 1 / math.Sqrt(ss)
		for i := range v {
			v[i] = float32(float64(v[i]) * inv)
		}
	}
	return v
}

// base64Floats is OpenAI's base64 encoding: little-endian float32s.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
