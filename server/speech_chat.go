package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
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
	stream bool
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
		if a.format != "pcm16" {
			return nil, badRequest("audio.format", "a streamed answer speaks pcm16 (as OpenAI's), not %s", a.format)
		}
		if n, ok := fields["n"]; ok && string(bytes.TrimSpace(n)) != "1" && string(bytes.TrimSpace(n)) != "null" {
			return nil, badRequest("n", "a streamed spoken answer has one choice")
		}
		a.stream = true
	}
	delete(obj, "voice")
	delete(obj, "format")
	return a, nil
}

// chatWithAudio answers a chat request that asks for audio: the text
// from llm, then each choice's speech from the speech model.
func (b *Both) chatWithAudio(w http.ResponseWriter, r *http.Request, fields map[string]json.RawMessage, a *chatAudio, llm http.Handler) *apiError {
	if _, e := b.speechJob(a, "."); e != nil {
		return e // the voice and the other speech fields, before any text is made
	}
	delete(fields, "modalities")
	delete(fields, "audio")
	body, _ := json.Marshal(fields)
	req := r.Clone(r.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if a.stream {
		return b.streamChatAudio(w, req, a)
	}
	text := httptest.NewRecorder()
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

// speechBody is the /v1/audio/speech body that speaks text as a asks: a
// streamed answer asks for streamed audio, so the speech route's rules for
// streaming (no speed change) hold. The keys that shape the answer are
// the chat request's own, not the extras'.
func (b *Both) speechBody(a *chatAudio, text string) []byte {
	fields := map[string]any{"model": b.Speech.cfg.ModelName, "input": text, "voice": a.voice, "response_format": chatAudioFormats[a.format]}
	if a.stream {
		fields["stream_format"] = "audio"
	}
	for k, v := range a.extra {
		switch k {
		case "model", "input", "response_format", "stream", "stream_format", "output_mode":
		default:
			fields[k] = v
		}
	}
	body, _ := json.Marshal(fields)
	return body
}

// speak is the speech model's audio of text, as /v1/audio/speech answers
// it; its errors name the chat request's audio fields.
func (b *Both) speak(r *http.Request, a *chatAudio, text string) ([]byte, *apiError) {
	body := b.speechBody(a, text)
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
	return nil, audioParam(&e.Error)
}

// audioParam renames a speech error's field as the chat request has it.
func audioParam(e *apiError) *apiError {
	if p, ok := e.Param.(string); ok && p != "" {
		e.Param = "audio." + p
	}
	return e
}

// speechJob checks a's speech request for text: the job to submit.
func (b *Both) speechJob(a *chatAudio, text string) (*speechJob, *apiError) {
	var req speechRequest
	if err := json.Unmarshal(b.speechBody(a, text), &req); err != nil {
		return nil, badRequest("audio", "audio: %v", err)
	}
	job, e := b.Speech.check(&req)
	if e != nil {
		return nil, audioParam(e)
	}
	return job, nil
}

// streamChatAudio streams a spoken answer as OpenAI's audio models do:
// the text as delta.audio.transcript while it generates, and each
// sentence, once complete, spoken in turn as delta.audio.data (base64
// pcm16), beside the text still generating. The finish chunk waits for
// the last sentence's audio.
func (b *Both) streamChatAudio(w http.ResponseWriter, r *http.Request, a *chatAudio) *apiError {
	job, t, g, base, err := b.LLM.startChat(w, r)
	if err != nil {
		return err
	}
	out := newSSE(w)
	var mu sync.Mutex
	send := func(d *chatMessageOut, finish *string) error {
		mu.Lock()
		defer mu.Unlock()
		resp := base
		resp.Object, resp.Choices = "chat.completion.chunk", []chatChoice{{Index: 0, Delta: d, FinishReason: finish}}
		return out.send(resp)
	}
	id := newID("audio_")
	send(&chatMessageOut{Role: "assistant", Audio: &audioDelta{ID: id}}, nil)
	sentences := make(chan string, 1024) // the text outruns the speech; max_tokens bounds it
	spoken := make(chan *apiError, 1)
	go func() { spoken <- b.speakEach(r, a, sentences, send) }()
	var split sentenceSplitter
	finish, calls := "", 0
	ok := g.stream(out.fail, func(cd choiceDelta) error {
		ch, _ := b.LLM.chatDelta(job, t, cd, &calls)
		if c := ch.Delta.Content; c != nil && *c != "" {
			if err := send(&chatMessageOut{Audio: &audioDelta{Transcript: *c}}, nil); err != nil {
				return err
			}
			for _, s := range split.add(*c) {
				sentences <- s
			}
			ch.Delta.Content = nil
		}
		if ch.Delta.ReasoningContent != nil || len(ch.Delta.ToolCalls) > 0 {
			if err := send(ch.Delta, nil); err != nil {
				return err
			}
		}
		if cd.d.finish != "" {
			finish = *ch.FinishReason
			g.tm.finish(finish)
		}
		return nil
	})
	if rest := split.flush(); rest != "" {
		sentences <- rest
	}
	close(sentences)
	e := <-spoken
	switch {
	case !ok:
		return nil
	case e != nil:
		out.fail(e)
		return nil
	}
	send(&chatMessageOut{Audio: &audioDelta{ID: id, ExpiresAt: time.Now().Add(time.Hour).Unix()}}, &finish)
	if so := job.req.StreamOptions; so != nil && so.IncludeUsage {
		resp := base
		resp.Object, resp.Choices, resp.Usage = "chat.completion.chunk", []chatChoice{}, g.usage()
		out.send(resp)
	}
	out.done()
	return nil
}

// speakEach speaks the sentences in turn, sending each one's PCM as it
// comes; after an error it reads the rest without speaking.
func (b *Both) speakEach(r *http.Request, a *chatAudio, sentences <-chan string, send func(*chatMessageOut, *string) error) *apiError {
	var failed *apiError
	for s := range sentences {
		if failed != nil || strings.TrimSpace(s) == "" {
			continue
		}
		failed = b.speakStream(r, a, s, send)
	}
	return failed
}

// speakStream speaks one sentence, its PCM sent as audio deltas.
func (b *Both) speakStream(r *http.Request, a *chatAudio, text string, send func(*chatMessageOut, *string) error) *apiError {
	job, e := b.speechJob(a, text)
	if e != nil {
		return e
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch, err := b.Speech.submit(ctx, job, time.Now())
	if err != nil {
		return submitError(err)
	}
	for ev := range ch {
		if o := job.out(ev); len(o.pcm) > 0 {
			if err := send(&chatMessageOut{Audio: &audioDelta{Data: base64.StdEncoding.EncodeToString(o.pcm)}}, nil); err != nil {
				return errGone
			}
		}
		if ev.Finish != "" {
			return eventError(ev)
		}
	}
	return errGone
}

// sentenceSplitter cuts streamed text into sentences to speak: a sentence
// ends at . ! ? or ; followed by a space or newline, at a newline, or at
// CJK sentence punctuation; a run without one is cut at a space after 300
// bytes, so speech does not wait long for the text.
type sentenceSplitter struct{ buf string }

func (p *sentenceSplitter) add(text string) []string {
	p.buf += text
	var out []string
	for {
		i := sentenceEnd(p.buf)
		if i < 0 {
			return out
		}
		out = append(out, p.buf[:i])
		p.buf = p.buf[i:]
	}
}

// flush is what is left at the end.
func (p *sentenceSplitter) flush() string {
	rest := p.buf
	p.buf = ""
	return rest
}

// sentenceEnd is the length of the first complete sentence of s, or -1
// while none is: a stop is known to end one only once the space after it
// has come.
func sentenceEnd(s string) int {
	for i, c := range s {
		switch c {
		case '\n', '。', '！', '？', '；':
			return i + utf8.RuneLen(c)
		case '.', '!', '?', ';':
			if i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\n') {
				return i + 1
			}
		case ' ':
			if i >= 300 {
				return i
			}
		}
	}
	return -1
}

// copyResponse writes a recorded response as it is.
func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}
