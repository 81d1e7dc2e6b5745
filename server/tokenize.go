package server

import (
	"encoding/json"
	"net/http"

	"github.com/siskin-ml/siskin/tokenizer"
)

// tokenizeResponse is vLLM's TokenizeResponse; token_strs is null unless
// return_token_strs asked for it.
type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// tokenize is vLLM's POST /tokenize: a prompt (add_special_tokens
// defaults to true), or chat messages rendered through the template with
// tools and chat_template_kwargs (add_special_tokens defaults to false,
// as the template writes the special tokens itself).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model               string            `json:"model"`
		Prompt              *string           `json:"prompt"`
		Messages            json.RawMessage   `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs"`
		AddSpecialTokens    *bool             `json:"add_special_tokens"`
		AddGenerationPrompt *bool             `json:"add_generation_prompt"`
		ContinueFinal       bool              `json:"continue_final_message"`
		ReturnTokenStrs     bool              `json:"return_token_strs"`
	}
	if err := s.decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		writeError(w, err)
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
		msgs, merr := parseMessages(req.Messages)
		if merr != nil {
			writeError(w, merr)
			return
		}
		if _, terr := parseTools(req.Tools); terr != nil {
			writeError(w, terr)
			return
		}
		addGen, gerr := generationPrompt(req.AddGenerationPrompt, req.ContinueFinal)
		if gerr != nil {
			writeError(w, gerr)
			return
		}
		opts, oerr := s.renderOptions(msgs, req.Tools, addGen, req.ChatTemplateKwargs)
		if oerr != nil {
			writeError(w, oerr)
			return
		}
		opts.ContinueFinalMessage = req.ContinueFinal
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
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []int{}
	}
	if req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i] = s.tok.Piece(id)
		}
	}
	writeJSON(w, 200, resp)
}

// detokenize is vLLM's POST /detokenize: {"tokens": [...]} to
// {"prompt": text}, special tokens included.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if err := s.decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
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
