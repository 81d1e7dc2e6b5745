package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/qwen3tts"
)

// ttsCase is a golden talker case (tts/talker/golden/tiny-cv-eq, made by
// the official Qwen3-TTS code in float64): its request and its codes.
type ttsCase struct {
	name    string
	Request struct {
		InputIDs     []int  `json:"input_ids"`
		Speaker      string `json:"speaker"`
		Language     string `json:"language"`
		NonStreaming bool   `json:"non_streaming_mode"`
	} `json:"request"`
	Sampling struct {
		RepetitionPenalty float64 `json:"repetition_penalty"`
	} `json:"sampling"`
	Codes   [][]int `json:"codes"`
	NFrames int     `json:"n_frames"`
}

func loadTTSCases(t *testing.T) (*qwen3tts.Model, []*ttsCase) {
	t.Helper()
	m, err := qwen3tts.Load(testdata.Path(t, "tts", "talker", "ckpt", "tiny-cv-eq-bf16"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	dir := testdata.Path(t, "tts", "talker", "golden", "tiny-cv-eq")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cases []*ttsCase
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "cv_") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		c := &ttsCase{name: e.Name()}
		if err := json.Unmarshal(raw, c); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		cases = append(cases, c)
	}
	if len(cases) != 7 {
		t.Fatalf("%d cv_* cases in %s, want 7", len(cases), dir)
	}
	return m, cases
}

// speech is the case's request: greedy talker and predictor, the case's
// repetition penalty and frame count, codes out.
func (c *ttsCase) speech(m *qwen3tts.Model) Request {
	u := m.Cfg.NewRequest(c.Request.InputIDs, qwen3tts.Voice{Speaker: c.Request.Speaker, Language: c.Request.Language, NonStreaming: c.Request.NonStreaming})
	u.Talker.Greedy, u.Predictor.Greedy = true, true
	u.RepetitionPenalty = c.Sampling.RepetitionPenalty
	u.MaxFrames = c.NFrames
	return Request{Prompt: u.IDs, MaxTokens: u.MaxFrames, Params: &Speech{Utterance: u, Codes: true}}
}

// collectFrames reads a codes-mode stream to its end.
func collectCodes(t *testing.T, ch <-chan Event) ([][]int, FinishReason) {
	var frames [][]int
	for ev := range ch {
		if ev.Err != nil {
			t.Error(ev.Err)
			return nil, ev.Finish
		}
		if f, ok := ev.Data.([]int); ok {
			frames = append(frames, f)
		}
		if ev.Finish != "" {
			return frames, ev.Finish
		}
	}
	t.Error("stream closed without a finish")
	return nil, ""
}

// TestSpeechPipelineGolden: every cv_* case through the talker and codec
// stages in codes mode gives the golden codes exactly (greedy, float
// weights, float32 KV), alone and all at once (continuous batching).
func TestSpeechPipelineGolden(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 8}, m, nil)
	defer e.Close()
	check := func(c *ttsCase, frames [][]int) {
		if !slices.EqualFunc(frames, c.Codes, slices.Equal) {
			t.Errorf("%s: %d frames differ from the golden %d", c.name, len(frames), len(c.Codes))
		}
	}
	for _, c := range cases {
		ch, err := e.Submit(context.Background(), c.speech(m))
		if err != nil {
			t.Fatal(err)
		}
		frames, _ := collectCodes(t, ch)
		check(c, frames)
	}
	var wg sync.WaitGroup
	results := make([][][]int, len(cases))
	for i, c := range cases {
		// Started a little apart so utterances join a running batch.
		ch, err := e.Submit(context.Background(), c.speech(m))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { results[i], _ = collectCodes(t, ch) })
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	for i, c := range cases {
		check(c, results[i])
	}
	if s := e.Stats(); s.Running != 0 || s.KVUsedBytes != 0 {
		t.Errorf("after all: %d running, %d bytes reserved", s.Running, s.KVUsedBytes)
	}
}

// TestSpeechCancel: a cancelled utterance frees its reservations and the
// running count within a step; the others finish with their codes.
func TestSpeechCancel(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 8}, m, nil)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.Submit(ctx, cases[0].speech(m))
	if err != nil {
		t.Fatal(err)
	}
	<-ch // the first frame
	cancel()
	for ev := range ch {
		_ = ev
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().Running != 0 || e.Stats().KVUsedBytes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after cancel: %+v", e.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	ch, err = e.Submit(context.Background(), cases[1].speech(m))
	if err != nil {
		t.Fatal(err)
	}
	if frames, _ := collectCodes(t, ch); !slices.EqualFunc(frames, cases[1].Codes, slices.Equal) {
		t.Errorf("%s after a cancel: codes differ", cases[1].name)
	}
}

// TestSpeechRefused: what can never fit, or is not a speech request, is
// refused at Submit.
func TestSpeechRefused(t *testing.T) {
	m, cases := loadTTSCases(t)
	e := NewSpeechPipeline(Config{MaxNumSeqs: 2, KVCacheBytes: 1 << 10}, m, nil)
	defer e.Close()
	if _, err := e.Submit(context.Background(), cases[0].speech(m)); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("over the budget: %v", err)
	}
	r := cases[0].speech(m)
	r.Params.(*Speech).Utterance.MaxFrames = m.Cfg.Talker.ContextLength
	if _, err := e.Submit(context.Background(), r); err == nil {
		t.Error("past the talker context: no error")
	}
	if _, err := e.Submit(context.Background(), Request{}); err == nil {
		t.Error("no Speech params: no error")
	}
	r = cases[0].speech(m)
	r.Params.(*Speech).Codes = false
	if _, err := e.Submit(context.Background(), r); err == nil || !strings.Contains(err.Error(), "codec") {
		t.Errorf("audio without a codec: %v", err)
	}
}
