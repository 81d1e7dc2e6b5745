package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// Chat with modalities ["text", "audio"] beside a speech model: the
// message's text becomes the audio's transcript (content null, as
// OpenAI's audio models answer) and its data is the WAV that
// /v1/audio/speech makes of that text with the same voice and seed; the
// audio object's other keys reach the speech request. Bad audio fields
// are 400s naming them (a streamed one before the stream starts); without
// a speech model, modalities audio is a 400.
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
	// The answer's shape is the chat request's: output_mode among the
	// audio keys does not turn the audio into codec frames.
	chat["audio"] = map[string]any{"voice": "aiden", "format": "wav", "seed": 3, "max_new_tokens": 4, "output_mode": "codec_tokens"}
	code, raw = post("/v1/chat/completions", chat)
	if err := json.Unmarshal(raw, &spoken); code != 200 || err != nil {
		t.Fatalf("audio chat with output_mode: %d %v %s", code, err, raw)
	}
	if got, _ := base64.StdEncoding.DecodeString(spoken.Choices[0].Message.Audio.Data); !bytes.Equal(got, want) {
		t.Errorf("with output_mode among the audio keys: %d bytes of audio, want the %d of the WAV", len(got), len(want))
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
		{map[string]any{"voice": "aiden", "format": "wav"}, true, "audio.format"},
		{map[string]any{"voice": "nobody", "format": "pcm16"}, true, "audio.voice"},
		{map[string]any{"voice": "aiden", "format": "pcm16", "speed": 2}, true, "audio.speed"},
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

// A streamed spoken answer: the text arrives as delta.audio.transcript
// while it generates, and each sentence's speech as delta.audio.data, the
// PCM /v1/audio/speech makes of that sentence (same voice and seed), in
// order; the last chunk carries the finish reason and expires_at. The
// text is fixed by a structured-output regex so that it has sentences.
func TestChatAudioStream(t *testing.T) {
	f := newSpeechFixture(t)
	ts := &testServer{Server: httptest.NewServer((&Both{LLM: qwen(t).srv, Speech: f.sp}).Handler())}
	defer ts.Close()
	const text = "Hi there. How are you? Fine."
	code, raw := ts.post(t, "/v1/chat/completions", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "Say hi."}}, "max_tokens": 40, "temperature": 0, "stream": true,
		"structured_outputs": map[string]any{"regex": `Hi there\. How are you\? Fine\.`},
		"modalities":         []string{"text", "audio"}, "audio": map[string]any{"voice": "aiden", "format": "pcm16", "seed": 3, "max_new_tokens": 3},
	})
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	var transcript string
	var pcm []byte
	var finish *string
	var ids []string
	var expires int64
	for _, e := range bodies(t, raw, true) {
		var c struct {
			Choices []struct {
				Delta struct {
					Content *string
					Audio   *audioDelta
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal(e, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("%v: %s", err, e)
		}
		ch := c.Choices[0]
		if ch.Delta.Content != nil || finish != nil {
			t.Errorf("content, or a chunk after the finish: %s", e)
		}
		if a := ch.Delta.Audio; a != nil {
			transcript += a.Transcript
			b, err := base64.StdEncoding.DecodeString(a.Data)
			if err != nil {
				t.Fatal(err)
			}
			pcm = append(pcm, b...)
			if a.ID != "" {
				ids = append(ids, a.ID)
			}
			expires = max(expires, a.ExpiresAt)
		}
		finish = ch.FinishReason
	}
	if transcript != text || finish == nil || *finish != "stop" || len(ids) != 2 || ids[0] != ids[1] || expires == 0 {
		t.Fatalf("transcript %q, finish %v, ids %v, expires_at %d", transcript, finish, ids, expires)
	}
	var want []byte
	for _, s := range []string{"Hi there.", " How are you?", " Fine."} {
		code, b := ts.post(t, "/v1/audio/speech", map[string]any{"model": "tts", "input": s, "voice": "aiden", "seed": 3, "max_new_tokens": 3, "response_format": "pcm"})
		if code != 200 {
			t.Fatalf("speech of %q: %d %s", s, code, b)
		}
		want = append(want, b...)
	}
	if !bytes.Equal(pcm, want) || len(pcm) == 0 {
		t.Errorf("streamed audio: %d bytes, the three sentences spoken alone %d", len(pcm), len(want))
	}
}

// Sentences end at a stop with a space after it (known only once the
// space comes), at newlines and CJK stops, and at a space after 300 bytes.
func TestSentenceSplitter(t *testing.T) {
	var p sentenceSplitter
	var got []string
	for _, piece := range []string{"Hi", " there.", " 3.14 is pi", "! Yes", "\nno", "。好", "的？ ok"} {
		got = append(got, p.add(piece)...)
	}
	got = append(got, p.flush())
	want := []string{"Hi there.", " 3.14 is pi!", " Yes\n", "no。", "好的？", " ok"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	long := strings.Repeat("word ", 100)
	if s := p.add(long); len(s) != 1 || len(s[0]) < 300 || len(s[0]) > 305 {
		t.Errorf("a long run: %q", s)
	}
}
