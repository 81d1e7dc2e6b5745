package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/siskin-ml/siskin/audio"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
)

// speechUsage is the usage of a speech request (vLLM-Omni's shape).
type speechUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
	Details      struct {
		TextTokens   int `json:"text_tokens"`
		AudioTokens  int `json:"audio_tokens"`
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_token_details"`
}

func newSpeechUsage(job *speechJob, frames int) *speechUsage {
	u := &speechUsage{InputTokens: job.textTokens, OutputTokens: frames, TotalTokens: job.textTokens + frames}
	u.Details.TextTokens, u.Details.CachedTokens = job.textTokens, job.cached
	return u
}

// speechOut is what one event carries: PCM bytes (s16le) or frames.
type speechOut struct {
	pcm    []byte
	frames [][]int
}

func eventOut(ev engine.Event) speechOut {
	switch d := ev.Data.(type) {
	case []float32:
		b := make([]byte, 0, 2*len(d))
		for _, x := range d {
			b = binary.LittleEndian.AppendUint16(b, uint16(audio.Int16(x)))
		}
		return speechOut{pcm: b}
	case []int:
		return speechOut{frames: [][]int{d}}
	}
	return speechOut{}
}

// out is an event's content, recorded for the metrics.
func (job *speechJob) out(ev engine.Event) speechOut {
	o := eventOut(ev)
	if ev.CachedTokens > 0 {
		job.cached = ev.CachedTokens
	}
	job.track.observe(ev, o)
	return o
}

// eventError is the API error of a failed or aborted last event.
func eventError(ev engine.Event) *apiError {
	if ev.Finish == engine.FinishAbort {
		return errGone
	}
	if ev.Err != nil {
		return internalError(ev.Err)
	}
	return nil
}

// collectSpeech reads a request's events to the end.
func collectSpeech(ch <-chan engine.Event, job *speechJob) (pcm []byte, frames [][]int, e *apiError) {
	for ev := range ch {
		o := job.out(ev)
		pcm, frames = append(pcm, o.pcm...), append(frames, o.frames...)
		if ev.Finish != "" {
			return pcm, frames, eventError(ev)
		}
	}
	return pcm, frames, errGone
}

// writeBuffered answers with the whole clip in the requested format.
func writeBuffered(w http.ResponseWriter, ch <-chan engine.Event, job *speechJob) *apiError {
	pcm, _, e := collectSpeech(ch, job)
	if e != nil {
		return e
	}
	samples := make([]int16, len(pcm)/2)
	for i := range samples {
		samples[i] = int16(binary.LittleEndian.Uint16(pcm[2*i:]))
	}
	if job.speed != 1 {
		var err error
		if samples, err = stretch(samples, job.speed); err != nil {
			return internalError(err)
		}
	}
	var buf bytes.Buffer
	if err := audio.Write(&buf, audio.Format(job.format), samples, codec.SampleRate); err != nil {
		return internalError(err)
	}
	w.Header().Set("Content-Type", "audio/"+job.format)
	w.WriteHeader(200)
	w.Write(buf.Bytes())
	return nil
}

// writeCodes answers output_mode codec_tokens with the frames as JSON.
func writeCodes(w http.ResponseWriter, ch <-chan engine.Event, job *speechJob) *apiError {
	_, frames, e := collectSpeech(ch, job)
	if e != nil {
		return e
	}
	if frames == nil {
		frames = [][]int{}
	}
	writeJSON(w, 200, map[string]any{"codes": frames, "usage": newSpeechUsage(job, len(frames))})
	return nil
}

// streamWAVHeader is a WAV header of unknown length: RIFF and data sizes
// 0xFFFFFFFF, as OpenAI streams WAV.
func streamWAVHeader() []byte {
	h, _ := audio.WAVHeader(0, codec.SampleRate)
	binary.LittleEndian.PutUint32(h[4:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(h[40:], 0xFFFFFFFF)
	return h
}

// streamAudio is stream_format audio: chunked raw bytes as each chunk is
// decoded. An error after the first byte can only end the stream early.
func streamAudio(w http.ResponseWriter, ch <-chan engine.Event, job *speechJob) {
	w.Header().Set("Content-Type", "audio/"+job.format)
	w.WriteHeader(200)
	f, _ := w.(http.Flusher)
	if job.format == "wav" {
		w.Write(streamWAVHeader())
	}
	for ev := range ch {
		if o := job.out(ev); len(o.pcm) > 0 {
			if _, err := w.Write(o.pcm); err != nil {
				return // the deferred cancel frees the request
			}
			if f != nil {
				f.Flush()
			}
		}
		if ev.Finish != "" {
			return
		}
	}
}

// streamSSE is stream_format sse: speech.audio.delta events with base64
// audio (or codec frames), then speech.audio.done with usage.
func (s *Speech) streamSSE(w http.ResponseWriter, ch <-chan engine.Event, job *speechJob) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	f, _ := w.(http.Flusher)
	send := func(event string, v any) error {
		data, _ := json.Marshal(v)
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		if f != nil {
			f.Flush()
		}
		return err
	}
	frames, started := 0, false
	for ev := range ch {
		o := job.out(ev)
		var err error
		switch {
		case len(o.pcm) > 0:
			chunk := o.pcm
			if job.format == "wav" && !started {
				chunk = append(streamWAVHeader(), chunk...)
			}
			started = true
			err = send("speech.audio.delta", map[string]any{"type": "speech.audio.delta", "audio": base64.StdEncoding.EncodeToString(chunk), "response_format": job.format})
			frames += len(o.pcm) / 2 / s.samplesPerFrame()
		case len(o.frames) > 0:
			frames += len(o.frames)
			err = send("speech.audio.delta", map[string]any{"type": "speech.audio.delta", "codes": o.frames, "response_format": "codec_tokens"})
		}
		if err != nil {
			return
		}
		if ev.Finish == "" {
			continue
		}
		if e := eventError(ev); e != nil {
			if e != errGone {
				send("speech.audio.error", map[string]any{"error": map[string]any{"message": e.Message, "type": "server_error", "param": nil, "code": 500}})
			}
			return
		}
		send("speech.audio.done", map[string]any{"type": "speech.audio.done", "usage": newSpeechUsage(job, frames)})
		return
	}
}

// samplesPerFrame is the codec's hop: 24000 Hz / 12.5 frames/s.
func (s *Speech) samplesPerFrame() int { return codec.SampleRate * 2 / 25 }

// stretch plays samples speed times as fast, pitch kept (audio.Stretch).
func stretch(samples []int16, speed float64) ([]int16, error) {
	x := make([]float32, len(samples))
	for i, v := range samples {
		x[i] = float32(v) / 32767 // audio.Int16's scale: exact back
	}
	y, err := audio.Stretch(x, speed, codec.SampleRate)
	if err != nil {
		return nil, err
	}
	return audio.ToInt16(samples[:0], y), nil
}
