package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/siskin-ml/siskin/audio"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/tokenizer"
)

// postSpeech posts a body and returns the status and the response body.
func postSpeech(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	res, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// sseSpeech is an SSE request's PCM and last event's usage.
func sseSpeech(t *testing.T, url, body string) (pcm []byte, usage map[string]any) {
	t.Helper()
	code, b := postSpeech(t, url, body)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	events := parseSSE(t, b)
	for _, ev := range events[:len(events)-1] {
		chunk, _ := base64.StdEncoding.DecodeString(ev.data["audio"].(string))
		pcm = append(pcm, chunk...)
	}
	usage, _ = events[len(events)-1].data["usage"].(map[string]any)
	return pcm, usage
}

func cachedTokens(usage map[string]any) float64 {
	d, _ := usage["input_token_details"].(map[string]any)
	v, _ := d["cached_tokens"].(float64)
	return v
}

// metricValue reads one series' value from a /metrics page (-1: absent).
func metricValue(t *testing.T, page, series string) float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return -1
}

func getMetrics(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", res.StatusCode, b)
	}
	return string(b)
}

// TestSpeechConditioningCacheServed: the second request with a voice
// reports its cached conditioning rows in the usage (SSE and codes JSON)
// and in the prefix-cache metrics, and its audio is byte-equal to the
// uncached first one and to the offline pipeline; another voice is not
// served from that voice's rows.
func TestSpeechConditioningCacheServed(t *testing.T) {
	f := newSpeechFixture(t)
	const text = "Same voice again."
	ids, _ := f.sp.speechIDs(text, "")
	p, err := f.m.Cfg.BuildPrompt(ids, qwen3tts.Voice{Speaker: "serena", Language: "auto", NonStreaming: true})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"tts","input":"` + text + `","voice":"Serena","seed":9,"max_new_tokens":7,"stream_format":"sse","response_format":"pcm"}`
	pcm1, u1 := sseSpeech(t, f.URL, body)
	pcm2, u2 := sseSpeech(t, f.URL, body)
	if cachedTokens(u1) != 0 || cachedTokens(u2) != float64(p.Cond) || p.Cond == 0 {
		t.Errorf("cached_tokens %v then %v, want 0 then the %d conditioning rows", u1, u2, p.Cond)
	}
	if !bytes.Equal(pcm1, pcm2) || len(pcm1) == 0 {
		t.Errorf("the cached request's PCM (%d bytes) differs from the uncached one's (%d)", len(pcm2), len(pcm1))
	}
	code, wav := postSpeech(t, f.URL, `{"model":"tts","input":"`+text+`","voice":"serena","seed":9,"max_new_tokens":7}`)
	if want := f.offlineWAV(t, text, "serena", 9, 6); code != 200 || !bytes.Equal(wav, want) {
		t.Errorf("cached buffered WAV: %d, %d bytes, equal to the offline pipeline's: %v", code, len(wav), bytes.Equal(wav, want))
	}
	code, b := postSpeech(t, f.URL, `{"model":"tts","input":"Codes.","voice":"serena","seed":1,"max_new_tokens":3,"output_mode":"codec_tokens"}`)
	var codes struct {
		Usage map[string]any `json:"usage"`
	}
	if err := json.Unmarshal(b, &codes); err != nil || code != 200 || cachedTokens(codes.Usage) != float64(p.Cond) {
		t.Errorf("codes JSON: %d %s", code, b)
	}
	if _, u := sseSpeech(t, f.URL, strings.Replace(body, "Serena", "ryan", 1)); cachedTokens(u) != 0 {
		t.Errorf("another voice: %v cached", cachedTokens(u))
	}
	page := getMetrics(t, f.URL)
	if hits := metricValue(t, page, `vllm:prefix_cache_hits_total{model_name="tts"}`); hits != float64(3*p.Cond) {
		t.Errorf("vllm:prefix_cache_hits_total %v, want %d", hits, 3*p.Cond)
	}
	if q := metricValue(t, page, `vllm:prefix_cache_queries_total{model_name="tts"}`); q <= float64(5*p.Cond) {
		t.Errorf("vllm:prefix_cache_queries_total %v", q)
	}
}

// TestSpeechInstructions: instructions become the official instruct
// block (the whole "<|im_start|>user\n...<|im_end|>\n" tokenized as the
// official code does) before the role, change the codes, and are part of
// the conditioning salt. The fixture is 0.6B-sized, whose instructions
// the official code drops (a 400 in the bad-request table); set to 1.7B
// here.
func TestSpeechInstructions(t *testing.T) {
	f := newSpeechFixture(t)
	f.m.Cfg.ModelSize = "1b7"
	const instr = "Speak slowly, like a storyteller."
	want := f.sp.tok.Encode("<|im_start|>user\n"+instr+"<|im_end|>\n", tokenizer.EncodeOptions{ParseSpecial: true})
	if got := f.sp.instructIDs(instr); !slices.Equal(got, want) || len(want) < 5 {
		t.Fatalf("instruct ids %v, want %v", got, want)
	}
	served := func(instructions string) (codes [][]int, cached float64) {
		body, _ := json.Marshal(map[string]any{"model": "tts", "input": "Once upon a time.", "voice": "ryan", "seed": 4, "max_new_tokens": 6, "output_mode": "codec_tokens", "instructions": instructions})
		code, b := postSpeech(t, f.URL, string(body))
		var got struct {
			Codes [][]int        `json:"codes"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal(b, &got); err != nil || code != 200 {
			t.Fatalf("instructions %q: %d %s", instructions, code, b)
		}
		return got.Codes, cachedTokens(got.Usage)
	}
	ids, _ := f.sp.speechIDs("Once upon a time.", "")
	r := f.m.Cfg.NewRequest(ids, qwen3tts.Voice{Speaker: "ryan", Language: "auto", NonStreaming: true, Instruct: want})
	r.Seed, r.Seeded, r.MaxFrames = 4, true, 5
	offline, err := f.m.Generate([]*qwen3tts.Request{r})
	if err != nil {
		t.Fatal(err)
	}
	with, c1 := served(instr)
	again, c2 := served(instr)
	plain, c3 := served("")
	if !slices.EqualFunc(with, offline[0].Codes, slices.Equal) || !slices.EqualFunc(again, with, slices.Equal) {
		t.Errorf("with instructions: %v, again %v, offline %v", with, again, offline[0].Codes)
	}
	if slices.EqualFunc(plain, with, slices.Equal) {
		t.Error("instructions did not change the codes")
	}
	if c1 != 0 || c2 == 0 || c3 != 0 {
		t.Errorf("cached rows %v, %v, %v: want the instructions' conditioning cached only on the second", c1, c2, c3)
	}
}

// TestSpeechMetricsServed: after a request, /metrics has the speech
// histograms (time to first audio, real-time factor, e2e latency, each
// stage's step time), the audio seconds and vLLM's running/waiting
// gauges at 0.
func TestSpeechMetricsServed(t *testing.T) {
	f := newSpeechFixture(t)
	if code, b := postSpeech(t, f.URL, `{"model":"tts","input":"Count me.","seed":2,"max_new_tokens":5,"response_format":"pcm"}`); code != 200 || len(b) != 4*2*f.sp.samplesPerFrame() {
		t.Fatalf("%d, %d bytes", code, len(b))
	}
	checkSpeechMetrics(t, getMetrics(t, f.URL), "tts", 1, 4)
}

// checkSpeechMetrics checks the speech series of one served model after
// n finished requests of frames frames each.
func checkSpeechMetrics(t *testing.T, page, model string, n, frames float64) {
	t.Helper()
	l := `{model_name="` + model + `"}`
	for series, want := range map[string]float64{
		"siskin:speech_time_to_first_audio_seconds_count" + l: n,
		"siskin:speech_real_time_factor_count" + l:            n,
		"vllm:e2e_request_latency_seconds_count" + l:          n,
		"siskin:speech_audio_seconds_total" + l:               n * frames * 0.08,
		"vllm:generation_tokens_total" + l:                    n * frames,
		"vllm:num_requests_running" + l:                       0,
		"vllm:num_requests_waiting" + l:                       0,
	} {
		if got := metricValue(t, page, series); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, st := range speechStages {
		series := `siskin:speech_step_seconds_count{model_name="` + model + `",stage="` + st + `"}`
		if got := metricValue(t, page, series); got < 1 {
			t.Errorf("%s = %v, want steps", series, got)
		}
	}
}

// TestSpeechSpeed: speed stretches the buffered clip to round(n/speed)
// samples with audio.Stretch (pitch kept; its own tests check that) of
// the very PCM speed 1 gives for the same seed, in every format; the
// WebSocket, which streams, refuses it.
func TestSpeechSpeed(t *testing.T) {
	f := newSpeechFixture(t)
	req := func(speed float64, format string) []byte {
		body, _ := json.Marshal(map[string]any{"model": "tts", "input": "Faster or slower.", "voice": "aiden", "seed": 3, "max_new_tokens": 9, "speed": speed, "response_format": format})
		code, b := postSpeech(t, f.URL, string(body))
		if code != 200 {
			t.Fatalf("speed %v: %d %s", speed, code, b)
		}
		return b
	}
	toFloat := func(pcm []byte) []float32 {
		x := make([]float32, len(pcm)/2)
		for i := range x {
			x[i] = float32(int16(binary.LittleEndian.Uint16(pcm[2*i:]))) / 32767
		}
		return x
	}
	base := req(1, "pcm")
	for _, speed := range []float64{0.5, 1.25, 2} {
		got := req(speed, "pcm")
		y, err := audio.Stretch(toFloat(base), speed, codec.SampleRate)
		if err != nil {
			t.Fatal(err)
		}
		want := audio.ToInt16(nil, y)
		if n := int(math.Round(float64(len(base)/2) / speed)); len(got) != 2*n || len(want) != n {
			t.Fatalf("speed %v: %d samples, want %d", speed, len(got)/2, n)
		}
		for i, v := range want {
			if int16(binary.LittleEndian.Uint16(got[2*i:])) != v {
				t.Fatalf("speed %v: sample %d differs from audio.Stretch of the speed-1 PCM", speed, i)
			}
		}
		if wav := req(speed, "wav"); !bytes.Equal(wav[audio.WAVHeaderSize:], got) {
			t.Errorf("speed %v: the WAV's samples differ from the PCM", speed)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.URL, "http")+"/v1/audio/speech/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsSend(t, ctx, c, `{"type":"session.config","model":"tts","speed":2}`)
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "error" || ev.msg["param"] != "speed" {
		t.Errorf("speed on the WebSocket: %v", ev.msg)
	}
}
