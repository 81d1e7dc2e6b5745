package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"
)

// Chat completions that also speak (OpenAI's modalities ["text", "audio"]):
// the LLM answers as usual, then the speech model reads each choice's
// text, and the message carries the audio (base64, with the text as its
// transcript) in place of its content, as OpenAI's audio models answer.

// chatAudio is the request's audio object: OpenAI's voice and format; any
// other key (language, instructions, seed, max_new_tokens, ...) goes to
// the speech request as /v1/audio/speech takes it.
type chatAudio struct {
	voice  json.RawMessage
	format string
	extra  map[string]json.RawMessage
}

// chatAudioFormats maps OpenAI's audio formats to /v1/audio/speech's.
var chatAudioFormats = map[string]string{"wav": "wav", "pcm16": "pcm", "flac": "flac"}

// audioOf reads modalities and audio from a chat body; nil when the
// request asks for text only.
func audioOf(fields map[string]json.RawMessage) (*chatAudio, *apiError) {
	var modalities []string
	if raw, ok := fields["modalities"]; ok && json.Unmarshal(raw, &modalities) != nil {
		return nil, badRequest("modalities", "modalities must be a list of \"text\" and \"audio\"")
	}
	for _, m := range modalities {
		if m != "text" && m != "audio" {
			return nil, badRequest("modalities", "modalities: %q is not one of text, audio", m)
		}
	}
	if !slices.Contains(modalities, "audio") {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(fields["audio"], &obj) != nil || obj == nil {
		return nil, badRequest("audio", "modalities audio needs audio: {\"voice\", \"format\"}")
	}
	a := &chatAudio{voice: obj["voice"], extra: obj}
	if len(a.voice) == 0 {
		return nil, badRequest("audio.voice", "audio.voice is required")
	}
	if json.Unmarshal(obj["format"], &a.format) != nil || chatAudioFormats[a.format] == "" {
		return nil, badRequest("audio.format", "audio.format must be wav, pcm16 or flac (pure Go encoders only)")
	}
	if s, ok := fields["stream"]; ok && string(bytes.TrimSpace(s)) == "true" {
		return nil, badRequest("stream", "audio output is answered whole: set stream to false, or stream speech from /v1/audio/speech")
	}
	delete(obj, "voice")
	delete(obj, "format")
	return a, nil
}

// chatWithAudio answers a chat request that asks for audio: the text
// from llm, then each choice's speech from the speech model.
func (b *Both) chatWithAudio(w http.ResponseWriter, r *http.Request, fields map[string]json.RawMessage, a *chatAudio, llm http.Handler) *apiError {
	delete(fields, "modalities")
	delete(fields, "audio")
	body, _ := json.Marshal(fields)
	text := httptest.NewRecorder()
	req := r.Clone(r.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	llm.ServeHTTP(text, req)
	if text.Code != 200 {
		copyResponse(w, text)
		return nil
	}
	var resp map[string]json.RawMessage
	var choices []map[string]json.RawMessage
	if json.Unmarshal(text.Body.Bytes(), &resp) != nil || json.Unmarshal(resp["choices"], &choices) != nil {
		return internalError(errors.New("the chat response is not readable"))
	}
	for _, ch := range choices {
		var msg map[string]json.RawMessage
		var content string
		if json.Unmarshal(ch["message"], &msg) != nil || json.Unmarshal(msg["content"], &content) != nil || content == "" {
			continue // a tool call, or nothing to say
		}
		data, err := b.speak(r, a, content)
		if err != nil {
			return err
		}
		msg["content"] = json.RawMessage("null")
		msg["audio"], _ = json.Marshal(map[string]any{
			"id": newID("audio_"), "data": base64.StdEncoding.EncodeToString(data),
			"expires_at": time.Now().Add(time.Hour).Unix(), "transcript": content,
		})
		ch["message"], _ = json.Marshal(msg)
	}
	resp["choices"], _ = json.Marshal(choices)
	writeJSON(w, 200, resp)
	return nil
}

// speak is the speech model's audio of text, as /v1/audio/speech answers
// it; its errors name the chat request's audio fields.
func (b *Both) speak(r *http.Request, a *chatAudio, text string) ([]byte, *apiError) {
	fields := map[string]any{"model": b.Speech.cfg.ModelName, "input": text, "voice": a.voice, "response_format": chatAudioFormats[a.format]}
	for k, v := range a.extra {
		if k != "model" && k != "input" && k != "response_format" && k != "stream" && k != "stream_format" {
			fields[k] = v
		}
	}
	body, _ := json.Marshal(fields)
	req := r.Clone(r.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	rec := httptest.NewRecorder()
	apiHandler(b.Speech.speech).ServeHTTP(rec, req)
	if rec.Code == 200 {
		return rec.Body.Bytes(), nil
	}
	var e struct{ Error apiError }
	if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Message == "" {
		return nil, &apiError{Status: rec.Code, Message: "speech failed: " + rec.Body.String(), Type: "internal_error"}
	}
	e.Error.Status = rec.Code
	if p, ok := e.Error.Param.(string); ok && p != "" {
		e.Error.Param = "audio." + p // the chat request's name for it
	}
	return nil, &e.Error
}

// copyResponse writes a recorded response as it is.
func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}
