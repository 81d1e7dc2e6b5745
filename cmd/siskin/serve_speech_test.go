package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestServeSpeechMatchesSpeak: siskin serve -m on a `siskin synth --arch
// qwen3_tts --shape tiny` folder answers a seeded /v1/audio/speech with
// the bytes `siskin speak -o` writes for the same text, voice and seed
// (asked with the official openai-go client);
// chat on it is a 404 naming the model kind.
func TestServeSpeechMatchesSpeak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tts")
	if out, err := siskin(t, "synth", "--arch", "qwen3_tts", "--shape", "tiny", "-o", dir, "--progress", "off"); err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	wavPath := filepath.Join(t.TempDir(), "out.wav")
	if out, err := siskin(t, "speak", "-m", dir, "--input", "Good morning.", "--voice", "serena", "--seed", "11", "--max-frames", "6", "-o", wavPath); err != nil {
		t.Fatalf("speak: %v\n%s", err, out)
	}
	want, err := os.ReadFile(wavPath)
	if err != nil {
		t.Fatal(err)
	}
	h, cleanup, _, err := buildServed(serveFlags{model: dir, maxNumSeqs: 4, maxRequestBytes: 1 << 20}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ts := httptest.NewServer(h.Handler())
	defer ts.Close()
	post := func(path, body string) (*http.Response, []byte) {
		res, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	// The official client, as a user calls it.
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	res, err := client.Audio.Speech.New(context.Background(), openai.AudioSpeechNewParams{
		Model: "tts", Input: "Good morning.", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("Serena")},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatWAV,
	}, option.WithJSONSet("seed", 11), option.WithJSONSet("max_new_tokens", 7))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Equal(got, want) {
		t.Errorf("served WAV: %d bytes; siskin speak wrote %d bytes (equal: %v)", len(got), len(want), bytes.Equal(got, want))
	}
	if res, body := post("/v1/chat/completions", `{"model":"tts","messages":[]}`); res.StatusCode != 404 || !bytes.Contains(body, []byte("text-to-speech")) {
		t.Errorf("chat on the speech model: %d %s", res.StatusCode, body)
	}
}
