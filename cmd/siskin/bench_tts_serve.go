package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/bench"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/server"
	"github.com/siskin-ml/siskin/tokenizer"
)

// serveTTSText is --serve's sentence when --text is not given: time to
// first audio is about a short one.
const serveTTSText = "Hello there, how are you today?"

// ttfaSplit is where one request's time to first audio went: from
// sending the request to the first PCM byte after the WAV header.
type ttfaSplit struct {
	TotalMS float64 `json:"total_ms"`
	// Steps of the engine before the first audio: the talker (its
	// prefill), the code predictor, the samplers, the codec's first chunk.
	TalkerMS    float64 `json:"talker_ms"`
	PredictorMS float64 `json:"predictor_ms"`
	SamplerMS   float64 `json:"sampler_ms"`
	CodecMS     float64 `json:"codec_ms"`
	// DeliveryMS is from the end of that codec step to the first byte
	// read: the event to the handler, PCM conversion, write, flush, TCP.
	DeliveryMS float64 `json:"delivery_ms"`
	// OtherMS is the rest: the HTTP request, validation and tokenizer,
	// admission, the request's start (its prompt's embeddings, cached
	// conditioning rows) and the engine loop around the steps.
	OtherMS float64 `json:"other_ms"`
}

// ttfaServeResult is `bench --tts --serve`'s report.
type ttfaServeResult struct {
	Model   string `json:"model"`
	Threads int    `json:"n_threads"`
	Text    string `json:"text"`
	// NonStreamingMode is the requests' non_streaming_mode: the whole
	// text in the prefill (true) or one text token per frame.
	NonStreamingMode bool      `json:"non_streaming_mode"`
	Reps             int       `json:"repetitions"`
	FirstEver        ttfaSplit `json:"first_request_of_process"`
	FirstVoice       ttfaSplit `json:"first_request_of_voice"` // medians
	Cached           ttfaSplit `json:"cached_conditioning"`    // medians
	FirstMin         float64   `json:"first_request_of_voice_min_ms"`
	CachedMin        float64   `json:"cached_conditioning_min_ms"`
}

// stepLog keeps the engine's step timings with when each was reported.
type stepLog struct {
	mu    sync.Mutex
	marks []stepMark
}

type stepMark struct {
	part string
	d    time.Duration
	at   time.Time
}

func (l *stepLog) observe(part string, d time.Duration) {
	l.mu.Lock()
	l.marks = append(l.marks, stepMark{part, d, time.Now()})
	l.mu.Unlock()
}

func (l *stepLog) take() []stepMark {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.marks
	l.marks = nil
	return m
}

// benchTTSServe is `siskin bench --tts --serve -m DIR`: the speech
// server of `siskin serve` in this process on a loopback port, timed
// from outside like a client: -r voice and language pairs, each first
// with its conditioning new, then again cached, after one untimed
// request of another pair (the process's first, reported alone).
func benchTTSServe(cmd *cobra.Command, dir string, t *ttsBenchFlags, o qwen3tts.Options, opt bench.TTSOptions, asJSON bool) error {
	if opt.Threads > 0 {
		kernels.SetThreads(opt.Threads)
	}
	text := t.text
	if !cmd.Flags().Changed("text") {
		text = serveTTSText
	}
	srv, err := startTTSServer(dir, o)
	if err != nil {
		return err
	}
	defer srv.close()
	pairs := voicePairs(srv.m, t.voice)
	if len(pairs) < opt.Reps+1 {
		return fmt.Errorf("-r %d: the model has %d voice and language pairs, one more is needed", opt.Reps, len(pairs))
	}
	res := &ttfaServeResult{Model: dir, Threads: kernels.Threads(), Text: text, NonStreamingMode: t.nonStreaming, Reps: opt.Reps}
	if res.FirstEver, err = srv.ttfa(text, t.nonStreaming, pairs[len(pairs)-1], t.frames, opt.Seed); err != nil {
		return err
	}
	var first, cached []ttfaSplit
	for _, p := range pairs[:opt.Reps] {
		for _, to := range []*[]ttfaSplit{&first, &cached} {
			s, err := srv.ttfa(text, t.nonStreaming, p, t.frames, opt.Seed)
			if err != nil {
				return err
			}
			*to = append(*to, s)
		}
	}
	res.FirstVoice, res.FirstMin = medianSplit(first)
	res.Cached, res.CachedMin = medianSplit(cached)
	return writeTTFAServe(cmd.OutOrStdout(), res, asJSON)
}

// ttsServer is a speech server in this process.
type ttsServer struct {
	m     *qwen3tts.Model
	eng   *engine.Engine
	http  *http.Server
	url   string
	name  string
	steps *stepLog
}

// startTTSServer serves dir as `siskin serve -m DIR` does (warm-up
// included), on a loopback port, its engine's steps logged.
func startTTSServer(dir string, o qwen3tts.Options) (*ttsServer, error) {
	m, err := qwen3tts.LoadWith(dir, o)
	if err != nil {
		return nil, err
	}
	dec, err := codec.Load(filepath.Join(dir, "speech_tokenizer"))
	if err == nil {
		var tok *tokenizer.Tokenizer
		if tok, err = tokenizer.Load(dir); err == nil {
			return serveTTS(m, dec, tok)
		}
	}
	m.Close()
	return nil, fmt.Errorf("%s: %w", dir, err)
}

func serveTTS(m *qwen3tts.Model, dec *codec.Decoder, tok *tokenizer.Tokenizer) (*ttsServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		m.Close()
		return nil, err
	}
	eng := engine.NewSpeechPipeline(engine.Config{MaxNumSeqs: 8, KVCacheBytes: 1 << 30}, m, dec)
	s := &ttsServer{m: m, eng: eng, name: "tts", url: "http://" + ln.Addr().String(), steps: &stepLog{}}
	sp := server.NewSpeech(server.SpeechConfig{ModelName: s.name}, eng, m, tok)
	metrics := eng.StepObserver() // the server's: pass the steps on
	eng.ObserveSteps(func(part string, d time.Duration) {
		s.steps.observe(part, d)
		if metrics != nil {
			metrics(part, d)
		}
	})
	if err := sp.WarmUp(context.Background()); err != nil { // as serve does
		s.close()
		return nil, err
	}
	s.http = &http.Server{Handler: sp.Handler()}
	go s.http.Serve(ln)
	return s, nil
}

func (s *ttsServer) close() {
	if s.http != nil {
		s.http.Close()
	}
	s.eng.Close()
	s.m.Close()
}

// voicePairs lists voice and language pairs, each language over every
// voice (or only voice, when given), "auto" first.
func voicePairs(m *qwen3tts.Model, voice string) [][2]string {
	voices := m.Cfg.SupportedSpeakers()
	if voice != "" {
		voices = []string{voice}
	}
	var pairs [][2]string
	for _, l := range m.Cfg.SupportedLanguages() {
		for _, v := range voices {
			pairs = append(pairs, [2]string{v, l})
		}
	}
	return pairs
}

// ttfa sends one request, reads to the first PCM byte, hangs up, waits
// for the engine to drop the request and splits the time.
func (s *ttsServer) ttfa(text string, nonStreaming bool, pair [2]string, frames int, seed uint64) (ttfaSplit, error) {
	body, _ := json.Marshal(map[string]any{"model": s.name, "input": text, "voice": pair[0], "language": pair[1],
		"stream_format": "audio", "response_format": "wav", "seed": seed, "max_new_tokens": frames + 1,
		"non_streaming_mode": nonStreaming})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	s.steps.take()
	t0 := time.Now()
	resp, err := client.Post(s.url+"/v1/audio/speech", "application/json", bytes.NewReader(body))
	if err != nil {
		return ttfaSplit{}, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return ttfaSplit{}, fmt.Errorf("POST /v1/audio/speech: %s: %s", resp.Status, msg)
	}
	buf, got := make([]byte, 4096), 0
	for got <= 44 && err == nil {
		var n int
		n, err = resp.Body.Read(buf)
		got += n
	}
	t1 := time.Now()
	resp.Body.Close()
	if got <= 44 {
		return ttfaSplit{}, fmt.Errorf("POST /v1/audio/speech (%s, %s): the stream ended before any audio: %v", pair[0], pair[1], err)
	}
	for st := s.eng.Stats(); st.Running+st.Waiting > 0; st = s.eng.Stats() {
		time.Sleep(time.Millisecond)
	}
	return splitTTFA(t0, t1, s.steps.take()), nil
}

// splitTTFA charges the time from t0 to t1 to the steps reported up to
// the first codec step, the delivery after it, and the rest.
func splitTTFA(t0, t1 time.Time, marks []stepMark) ttfaSplit {
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
	sp := ttfaSplit{TotalMS: ms(t1.Sub(t0))}
	steps := 0.0
	for _, m := range marks {
		d := ms(m.d)
		switch m.part {
		case "talker":
			sp.TalkerMS += d
		case "predictor":
			sp.PredictorMS += d
		case "sampler":
			sp.SamplerMS += d
		case "codec":
			sp.CodecMS += d
			sp.DeliveryMS = ms(t1.Sub(m.at))
		}
		steps += d
		if m.part == "codec" {
			break
		}
	}
	sp.OtherMS = sp.TotalMS - steps - sp.DeliveryMS
	return sp
}

// medianSplit is each field's median over splits, and the least total.
func medianSplit(splits []ttfaSplit) (ttfaSplit, float64) {
	med := func(f func(*ttfaSplit) *float64) float64 {
		v := make([]float64, len(splits))
		for i := range splits {
			v[i] = *f(&splits[i])
		}
		sort.Float64s(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	var out ttfaSplit
	for _, f := range splitFields {
		*f(&out) = med(f)
	}
	least := splits[0].TotalMS
	for _, s := range splits {
		least = min(least, s.TotalMS)
	}
	return out, least
}

// splitFields are ttfaSplit's figures.
var splitFields = []func(*ttfaSplit) *float64{
	func(s *ttfaSplit) *float64 { return &s.TotalMS },
	func(s *ttfaSplit) *float64 { return &s.TalkerMS },
	func(s *ttfaSplit) *float64 { return &s.PredictorMS },
	func(s *ttfaSplit) *float64 { return &s.SamplerMS },
	func(s *ttfaSplit) *float64 { return &s.CodecMS },
	func(s *ttfaSplit) *float64 { return &s.DeliveryMS },
	func(s *ttfaSplit) *float64 { return &s.OtherMS },
}

func writeTTFAServe(w io.Writer, r *ttfaServeResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "%s  threads %d  POST /v1/audio/speech stream_format audio, non_streaming_mode %t, %q\n", r.Model, r.Threads, r.NonStreamingMode, r.Text)
	fmt.Fprintf(w, "time to first audio (request to the first PCM byte), median of %d; split: engine steps before it, delivery, other\n", r.Reps)
	row := func(name string, s ttfaSplit, least string) {
		fmt.Fprintf(w, "%-22s %7.1f ms%s  talker %.1f  predictor %.1f  sampler %.1f  codec %.1f  delivery %.1f  other %.1f\n",
			name, s.TotalMS, least, s.TalkerMS, s.PredictorMS, s.SamplerMS, s.CodecMS, s.DeliveryMS, s.OtherMS)
	}
	row("first of the process", r.FirstEver, "             ")
	row("first of a voice", r.FirstVoice, fmt.Sprintf(" (min %6.1f)", r.FirstMin))
	row("cached conditioning", r.Cached, fmt.Sprintf(" (min %6.1f)", r.CachedMin))
	return nil
}
