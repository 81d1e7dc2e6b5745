package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/siskin-ml/siskin/audio"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
	"github.com/siskin-ml/siskin/tokenizer"
)

// speechFixture is a served `siskin synth --arch qwen3_tts --shape tiny`
// folder: random weights, real shapes of everything but the sizes.
type speechFixture struct {
	*httptest.Server
	sp  *Speech
	eng *engine.Engine
	m   *qwen3tts.Model
	dec *codec.Decoder
}

// tinyTTSDir writes the folder into the test's temp dir.
func tinyTTSDir(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := synth.Write(dir, synth.Options{Shape: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newSpeechFixture(t testing.TB) *speechFixture {
	t.Helper()
	return newSpeechFixtureWith(t, qwen3tts.Options{}, 8)
}

// newSpeechFixtureWith serves the tiny model loaded with o, maxSeqs
// utterances at a time.
func newSpeechFixtureWith(t testing.TB, o qwen3tts.Options, maxSeqs int) *speechFixture {
	t.Helper()
	dir := tinyTTSDir(t)
	m, err := qwen3tts.LoadWith(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := codec.Load(filepath.Join(dir, "speech_tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.NewSpeechPipeline(engine.Config{MaxNumSeqs: maxSeqs}, m, dec)
	sp := NewSpeech(SpeechConfig{ModelName: "tts"}, eng, m, tok)
	f := &speechFixture{Server: httptest.NewServer(sp.Handler()), sp: sp, eng: eng, m: m, dec: dec}
	t.Cleanup(func() {
		f.Close()
		eng.Close()
		m.Close()
	})
	return f
}

func (f *speechFixture) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(f.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

// say asks for text with the official client; extra sets more JSON fields.
func (f *speechFixture) say(t *testing.T, ctx context.Context, p openai.AudioSpeechNewParams, extra map[string]any) []byte {
	t.Helper()
	var opts []option.RequestOption
	for k, v := range extra {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	c := f.client()
	res, err := c.Audio.Speech.New(ctx, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func speechParams(text, voice string) openai.AudioSpeechNewParams {
	return openai.AudioSpeechNewParams{Model: "tts", Input: text, Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String(voice)}}
}

// offlineWAV is the same request run without the server: the talker's own
// batch loop (qwen3tts.Model.Generate), the whole-utterance codec decode
// and the WAV writer.
func (f *speechFixture) offlineWAV(t *testing.T, text, voice string, seed int64, frames int) []byte {
	ids, _ := f.sp.speechIDs(text, "")
	r := f.m.Cfg.NewRequest(ids, qwen3tts.Voice{Speaker: voice, Language: "auto", NonStreaming: true})
	r.Seed, r.Seeded, r.MaxFrames = uint64(seed), true, frames
	res, err := f.m.Generate([]*qwen3tts.Request{r})
	if err != nil {
		t.Fatal(err)
	}
	var codes []int32
	for _, fr := range res[0].Codes {
		for _, c := range fr {
			codes = append(codes, int32(c))
		}
	}
	pcm, err := f.dec.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := audio.WriteWAV(&buf, audio.ToInt16(nil, pcm), codec.SampleRate); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

func parseSSE(t *testing.T, body []byte) []sseEvent {
	var out []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("SSE data %q: %v", line, err)
			}
			out = append(out, sseEvent{name, d})
		}
	}
	return out
}

// TestSpeechSDK: with the official client, a seeded buffered WAV equals
// the offline pipeline byte for byte; the audio stream's PCM and the SSE
// deltas' PCM equal the buffered PCM; the last SSE event carries usage.
func TestSpeechSDK(t *testing.T) {
	f := newSpeechFixture(t)
	ctx := context.Background()
	const text, frames = "Hello there, little bird.", 8
	extra := map[string]any{"seed": 7, "max_new_tokens": frames + 1}
	wav := f.say(t, ctx, speechParams(text, "Vivian"), extra)
	if want := f.offlineWAV(t, text, "vivian", 7, frames); !bytes.Equal(wav, want) {
		t.Fatalf("buffered WAV (%d bytes) differs from the offline pipeline's (%d bytes)", len(wav), len(want))
	}
	pcm := wav[audio.WAVHeaderSize:]
	if len(pcm) != 2*frames*f.sp.samplesPerFrame() {
		t.Errorf("%d PCM bytes for %d frames", len(pcm), frames)
	}
	p := speechParams(text, "vivian")
	p.StreamFormat = openai.AudioSpeechNewParamsStreamFormatAudio
	extra["initial_codec_chunk_frames"] = 3
	stream := f.say(t, ctx, p, extra)
	if h := stream[:audio.WAVHeaderSize]; binary.LittleEndian.Uint32(h[4:]) != 0xFFFFFFFF || binary.LittleEndian.Uint32(h[40:]) != 0xFFFFFFFF {
		t.Errorf("stream WAV header sizes % x, want ff ff ff ff", h)
	}
	if !bytes.Equal(stream[audio.WAVHeaderSize:], pcm) {
		t.Errorf("audio stream PCM (%d bytes) differs from the buffered PCM", len(stream)-audio.WAVHeaderSize)
	}
	p.StreamFormat, p.ResponseFormat = openai.AudioSpeechNewParamsStreamFormatSSE, openai.AudioSpeechNewParamsResponseFormatPCM
	events := parseSSE(t, f.say(t, ctx, p, extra))
	var got []byte
	var chunks []int // frames per delta
	for _, ev := range events[:len(events)-1] {
		b, err := base64.StdEncoding.DecodeString(ev.data["audio"].(string))
		if ev.name != "speech.audio.delta" || err != nil {
			t.Fatalf("event %s: %v", ev.name, err)
		}
		got = append(got, b...)
		chunks = append(chunks, len(b)/(2*f.sp.samplesPerFrame()))
	}
	// The first chunk waits for its 3 frames, later ones for at least
	// codec.MinLaterChunk (2; more once the audio is ahead of playback, or
	// if frames queued while the codec was busy), the last takes what is
	// left.
	if len(chunks) < 2 || chunks[0] != 3 || slices.ContainsFunc(chunks[1:len(chunks)-1], func(n int) bool { return n < 2 }) {
		t.Errorf("SSE deltas of %v frames, want 3, then at least 2 each but the last", chunks)
	}
	if !bytes.Equal(got, pcm) {
		t.Errorf("SSE PCM (%d bytes) differs from the buffered PCM", len(got))
	}
	last := events[len(events)-1]
	usage, _ := last.data["usage"].(map[string]any)
	if last.name != "speech.audio.done" || usage["output_tokens"] != float64(frames) || usage["input_tokens"].(float64) < 1 {
		t.Errorf("last event %s %v, want speech.audio.done with %d output tokens", last.name, last.data, frames)
	}
}

// TestSpeechSeededConcurrent: a seeded request gives the same bytes alone
// and beside three others.
func TestSpeechSeededConcurrent(t *testing.T) {
	f := newSpeechFixture(t)
	ctx := context.Background()
	extra := map[string]any{"seed": 42, "max_new_tokens": 7}
	alone := f.say(t, ctx, speechParams("One two three.", "ryan"), extra)
	var wg sync.WaitGroup
	var together []byte
	for i := range 4 {
		wg.Go(func() {
			if i == 0 {
				together = f.say(t, ctx, speechParams("One two three.", "ryan"), extra)
				return
			}
			f.say(t, ctx, speechParams(strings.Repeat("Other words. ", i), "serena"), map[string]any{"seed": i, "max_new_tokens": 5 + 2*i})
		})
	}
	wg.Wait()
	if !bytes.Equal(alone, together) {
		t.Error("a seeded request alone and beside three others gave different bytes")
	}
}

// TestSpeechCodecTokens: output_mode codec_tokens answers the frames the
// talker makes offline for the same seed.
func TestSpeechCodecTokens(t *testing.T) {
	f := newSpeechFixture(t)
	body := `{"model":"tts","input":"Codes please.","voice":"aiden","seed":3,"max_new_tokens":5,"output_mode":"codec_tokens"}`
	res, err := http.Post(f.URL+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got struct {
		Codes [][]int `json:"codes"`
	}
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != 200 {
		t.Fatalf("status %d: %v", res.StatusCode, err)
	}
	ids, _ := f.sp.speechIDs("Codes please.", "")
	r := f.m.Cfg.NewRequest(ids, qwen3tts.Voice{Speaker: "aiden", Language: "auto", NonStreaming: true})
	r.Seed, r.Seeded, r.MaxFrames = 3, true, 4
	want, err := f.m.Generate([]*qwen3tts.Request{r})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Codes) != 4 || len(want[0].Codes) != 4 {
		t.Fatalf("%d frames served, %d offline; want 4", len(got.Codes), len(want[0].Codes))
	}
	for i := range got.Codes {
		for j := range got.Codes[i] {
			if got.Codes[i][j] != want[0].Codes[i][j] {
				t.Fatalf("frame %d code %d: %d, offline %d", i, j, got.Codes[i][j], want[0].Codes[i][j])
			}
		}
	}
}

// TestSpeechHangUp: a client that drops mid-stream has its request freed.
func TestSpeechHangUp(t *testing.T) {
	f := newSpeechFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"model":"tts","input":"A long one.","stream_format":"audio","response_format":"pcm","max_new_tokens":4000}`
	req, _ := http.NewRequestWithContext(ctx, "POST", f.URL+"/v1/audio/speech", strings.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(res.Body, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	cancel()
	res.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for s := f.eng.Stats(); s.Running != 0 || s.KVUsedBytes != 0; s = f.eng.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("after the hang-up: %d running, %d bytes reserved", s.Running, s.KVUsedBytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err = http.Get(f.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	metrics, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(metrics), `vllm:num_requests_running{model_name="tts"} 0`) {
		t.Errorf("metrics after the hang-up:\n%s", metrics)
	}
}
