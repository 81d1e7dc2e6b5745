package server

import (
	"encoding/json"
	"net/http"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/tokenizer"
)

// tokenize is vLLM's POST /tokenize: a prompt, or chat messages rendered
// through the template.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model               string          `json:"model"`
		Prompt              *string         `json:"prompt"`
		Messages            json.RawMessage `json:"messages"`
		AddSpecialTokens    *bool           `json:"add_special_tokens"`
		AddGenerationPrompt *bool           `json:"add_generation_prompt"`
		ReturnTokenStrs     bool            `json:"return_token_strs"`
	}
	if err := s.decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Model != "" && req.Model != s.cfg.ModelName {
		writeError(w, &apiError{Status: 404, Message: "the model " + req.Model + " does not exist", Type: "NotFoundError", Param: "model", Code: "model_not_found"})
		return
	}
	var text string
	addSpecial := true
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case len(req.Messages) > 0:
		if s.tmpl == nil {
			writeError(w, badRequest("messages", "this model has no chat template"))
			return
		}
		var msgs []chat.Message
		if err := json.Unmarshal(req.Messages, &msgs); err != nil {
			writeError(w, badRequest("messages", "messages: %v", err))
			return
		}
		opts := chat.RenderOptions{Messages: msgs, AddGenerationPrompt: req.AddGenerationPrompt == nil || *req.AddGenerationPrompt}
		if id := s.tok.BOS(); id >= 0 {
			opts.BOSToken = s.tok.Piece(id)
		}
		if id := s.tok.EOS(); id >= 0 {
			opts.EOSToken = s.tok.Piece(id)
		}
		var err error
		if text, err = s.tmpl.Render(opts); err != nil {
			writeError(w, badRequest("messages", "chat template: %v", err))
			return
		}
		addSpecial = false
	default:
		writeError(w, badRequest("prompt", "give prompt or messages"))
		return
	}
	if req.AddSpecialTokens != nil {
		addSpecial = *req.AddSpecialTokens
	}
	ids := s.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: addSpecial, ParseSpecial: true})
	resp := map[string]any{"tokens": ids, "count": len(ids), "max_model_len": s.cfg.MaxModelLen}
	if req.ReturnTokenStrs {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = s.tok.Piece(id)
		}
		resp["token_strs"] = strs
	}
	writeJSON(w, 200, resp)
}

// detokenize is vLLM's POST /detokenize.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if err := s.decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	vocab := s.tok.VocabSize()
	for _, id := range req.Tokens {
		if id < 0 || id >= vocab {
			writeError(w, badRequest("tokens", "token id %d is outside the vocabulary [0, %d)", id, vocab))
			return
		}
	}
	writeJSON(w, 200, map[string]any{"prompt": s.tok.Decode(req.Tokens)})
}
