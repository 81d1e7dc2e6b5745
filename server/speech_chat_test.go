package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// Chat with modalities ["text", "audio"] beside a speech model: the
// message's text becomes the audio's transcript (content null, as
// OpenAI's audio models answer) and its data is the WAV that
// /v1/audio/speech makes of that text with the same voice and seed; the
// audio object's other keys reach the speech request. Bad audio fields
// are 400s naming them; without a speech model, modalities audio is a 400.
func TestChatAudioOutput(t *testing.T) {
	f := newSpeechFixture(t)
	ts := &testServer{Server: httptest.NewServer((&Both{LLM: qwen(t).srv, Speech: f.sp}).Handler())}
	defer ts.Close()
	post := func(path string, body map[string]any) (int, []byte) { return ts.post(t, path, body) }
	msgs := []map[string]any{{"role": "user", "content": "Say hi."}}
	chat := map[string]any{"model": "test-model", "messages": msgs, "max_tokens": 6, "temperature": 0, "ignore_eos": true}
	code, raw := post("/v1/chat/completions", chat)
	var plain struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal(raw, &plain); code != 200 || err != nil {
		t.Fatalf("text chat: %d %v %s", code, err, raw)
	}
	text := plain.Choices[0].Message.Content

	chat["modalities"] = []string{"text", "audio"}
	chat["audio"] = map[string]any{"voice": "aiden", "format": "wav", "seed": 3, "max_new_tokens": 4}
	code, raw = post("/v1/chat/completions", chat)
	var spoken struct {
		Choices []struct {
			Message struct {
				Content *string
				Audio   struct {
					ID, Data, Transcript string
					ExpiresAt            int64 `json:"expires_at"`
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &spoken); code != 200 || err != nil || len(spoken.Choices) != 1 {
		t.Fatalf("audio chat: %d %v %s", code, err, raw)
	}
	m := spoken.Choices[0].Message
	wav, err := base64.StdEncoding.DecodeString(m.Audio.Data)
	if m.Content != nil || m.Audio.Transcript != text || m.Audio.ID == "" || m.Audio.ExpiresAt == 0 || err != nil {
		t.Fatalf("audio chat message: content %v, transcript %q (want %q), id %q, %v", m.Content, m.Audio.Transcript, text, m.Audio.ID, err)
	}
	code, want := post("/v1/audio/speech", map[string]any{"model": "tts", "input": text, "voice": "aiden", "seed": 3, "max_new_tokens": 4, "response_format": "wav"})
	if code != 200 || !bytes.Equal(wav, want) || len(wav) <= 44 {
		t.Errorf("audio: %d bytes, /v1/audio/speech gives %d (status %d)", len(wav), len(want), code)
	}

	for _, c := range []struct {
		audio  any
		stream bool
		param  string
	}{
		{map[string]any{"voice": "nobody", "format": "wav"}, false, "audio.voice"},
		{map[string]any{"voice": "aiden", "format": "mp3"}, false, "audio.format"},
		{map[string]any{"format": "wav"}, false, "audio.voice"},
		{nil, false, "audio"},
		{map[string]any{"voice": "aiden", "format": "pcm16"}, true, "stream"},
	} {
		chat["audio"], chat["stream"] = c.audio, c.stream
		code, raw := post("/v1/chat/completions", chat)
		if e := errorBody(t, raw); code != 400 || e.Param != c.param {
			t.Errorf("audio %v stream %v: %d, param %v (want %s): %s", c.audio, c.stream, code, e.Param, c.param, raw)
		}
	}

	alone := qwen(t)
	delete(chat, "stream")
	chat["audio"] = map[string]any{"voice": "aiden", "format": "wav"}
	if code, raw := alone.post(t, "/v1/chat/completions", chat); code != 400 || errorBody(t, raw).Param != "modalities" {
		t.Errorf("modalities audio without a speech model: %d %s", code, raw)
	}
}
