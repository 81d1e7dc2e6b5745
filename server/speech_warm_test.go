package server

import (
	"bytes"
	"context"
	"testing"
)

// TestSpeechWarmUp: after WarmUp, a client's first request of a short
// sentence reuses the warm-up's caches and codec stream (engine spares;
// the warm-up's caches are no larger than twice its reservation) and
// still streams
// the offline pipeline's PCM bit for bit; the warm-up's conditioning
// serves no client (another salt).
func TestSpeechWarmUp(t *testing.T) {
	f := newSpeechFixture(t)
	if err := f.sp.WarmUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	voice := f.m.Cfg.SupportedSpeakers()[0]
	const text = "Warm enough."
	// A short sentence with 29 frames reserves more than half the
	// warm-up's rows: it begins in the warm-up's caches.
	_, u := sseSpeech(t, f.URL, `{"model":"tts","input":"`+text+`","voice":"`+voice+`","seed":4,"max_new_tokens":30,"stream_format":"sse","response_format":"pcm"}`)
	if cachedTokens(u) != 0 {
		t.Errorf("the warm-up's conditioning served a client: %v cached", cachedTokens(u))
	}
	if n := f.eng.Stats().SpareHits; n != 1 {
		t.Errorf("the first request after the warm-up began in spare caches %d times, want 1", n)
	}
	code, streamed := postSpeech(t, f.URL, `{"model":"tts","input":"`+text+`","voice":"`+voice+`","seed":4,"max_new_tokens":6,"stream_format":"audio"}`)
	want := f.offlineWAV(t, text, voice, 4, 5)
	if code != 200 || len(streamed) < 44 || !bytes.Equal(streamed[44:], want[44:]) {
		t.Errorf("streamed after the warm-up: %d, %d bytes; PCM equal to the offline pipeline's: %v", code, len(streamed), len(streamed) >= 44 && bytes.Equal(streamed[44:], want[44:]))
	}
	if s := f.eng.Stats(); s.Running != 0 || s.KVUsedBytes != 0 {
		t.Errorf("after all: %d running, %d bytes reserved", s.Running, s.KVUsedBytes)
	}
}
