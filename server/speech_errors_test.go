package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSpeechBadRequests: every bad field is a 400 naming it (a bad voice
// lists the valid ones), an unknown model a 404, and the server keeps
// serving.
func TestSpeechBadRequests(t *testing.T) {
	f := newSpeechFixture(t)
	long := strings.Repeat("a", 4097)
	cases := []struct {
		name, body string
		status     int
		param, has string
	}{
		{"bad json", `{"model":`, 400, "", "invalid JSON"},
		{"trailing data", `{"model":"tts","input":"hi"} {}`, 400, "", "after the top-level"},
		{"unknown model", `{"model":"gpt-4o-mini-tts","input":"hi"}`, 404, "model", "does not exist"},
		{"no model", `{"input":"hi"}`, 400, "model", "required"},
		{"no input", `{"model":"tts"}`, 400, "input", "required"},
		{"empty input", `{"model":"tts","input":"  "}`, 400, "input", "empty"},
		{"oversize input", `{"model":"tts","input":"` + long + `"}`, 400, "input", "limit"},
		{"input type", `{"model":"tts","input":5}`, 400, "input", "expected"},
		{"bad voice", `{"model":"tts","input":"hi","voice":"alloy"}`, 400, "voice", "vivian"},
		{"voice type", `{"model":"tts","input":"hi","voice":5}`, 400, "voice", "valid voices"},
		{"mp3", `{"model":"tts","input":"hi","response_format":"mp3"}`, 400, "response_format", "encoder"},
		{"opus", `{"model":"tts","input":"hi","response_format":"opus"}`, 400, "response_format", "encoder"},
		{"aac", `{"model":"tts","input":"hi","response_format":"aac"}`, 400, "response_format", "encoder"},
		{"bad format", `{"model":"tts","input":"hi","response_format":"ogg"}`, 400, "response_format", "unknown"},
		{"format type", `{"model":"tts","input":"hi","response_format":1}`, 400, "response_format", "expected"},
		{"speed range", `{"model":"tts","input":"hi","speed":9}`, 400, "speed", "outside"},
		{"speed streamed", `{"model":"tts","input":"hi","speed":1.5,"stream_format":"audio"}`, 400, "speed", "streaming"},
		{"speed sse", `{"model":"tts","input":"hi","speed":0.5,"stream":true}`, 400, "speed", "streaming"},
		{"speed codes", `{"model":"tts","input":"hi","speed":2,"output_mode":"codec_tokens"}`, 400, "speed", "codec_tokens"},
		{"speed type", `{"model":"tts","input":"hi","speed":"fast"}`, 400, "speed", "expected"},
		{"stream format", `{"model":"tts","input":"hi","stream_format":"ws"}`, 400, "stream_format", "unknown"},
		{"stream flac", `{"model":"tts","input":"hi","stream_format":"audio","response_format":"flac"}`, 400, "response_format", "streaming"},
		{"stream type", `{"model":"tts","input":"hi","stream":"yes"}`, 400, "stream", "expected"},
		{"language", `{"model":"tts","input":"hi","language":"Klingon"}`, 400, "language", "valid"},
		{"task type", `{"model":"tts","input":"hi","task_type":"Base"}`, 400, "task_type", "CustomVoice"},
		{"seed range", `{"model":"tts","input":"hi","seed":1e30}`, 400, "seed", "expected"},
		{"seed type", `{"model":"tts","input":"hi","seed":"x"}`, 400, "seed", "expected"},
		{"max tokens low", `{"model":"tts","input":"hi","max_new_tokens":1}`, 400, "max_new_tokens", "outside"},
		{"max tokens high", `{"model":"tts","input":"hi","max_new_tokens":5000}`, 400, "max_new_tokens", "outside"},
		{"chunk frames", `{"model":"tts","input":"hi","initial_codec_chunk_frames":-1}`, 400, "initial_codec_chunk_frames", "outside"},
		{"non streaming type", `{"model":"tts","input":"hi","non_streaming_mode":3}`, 400, "non_streaming_mode", "expected"},
		{"output mode", `{"model":"tts","input":"hi","output_mode":"mel"}`, 400, "output_mode", "unknown"},
		{"codes as audio stream", `{"model":"tts","input":"hi","output_mode":"codec_tokens","stream_format":"audio"}`, 400, "stream_format", "sse"},
		{"instructions", `{"model":"tts","input":"hi","instructions":"` + strings.Repeat("b", 501) + `"}`, 400, "instructions", "limit"},
		{"instructions on 0.6B", `{"model":"tts","input":"hi","instructions":"calm"}`, 400, "instructions", "0.6B"},
		{"instructions type", `{"model":"tts","input":"hi","instructions":["calm"]}`, 400, "instructions", "expected"},
		{"model type", `{"model":7,"input":"hi"}`, 400, "model", "expected"},
		{"voice id", `{"model":"tts","input":"hi","voice":{"id":"alloy"}}`, 400, "voice", "valid voices"},
		{"language type", `{"model":"tts","input":"hi","language":true}`, 400, "language", "expected"},
		{"task type type", `{"model":"tts","input":"hi","task_type":1}`, 400, "task_type", "expected"},
		{"max tokens type", `{"model":"tts","input":"hi","max_new_tokens":"many"}`, 400, "max_new_tokens", "expected"},
		{"chunk frames high", `{"model":"tts","input":"hi","initial_codec_chunk_frames":5000}`, 400, "initial_codec_chunk_frames", "outside"},
		{"chunk frames type", `{"model":"tts","input":"hi","initial_codec_chunk_frames":1.5}`, 400, "initial_codec_chunk_frames", "expected"},
		{"output mode type", `{"model":"tts","input":"hi","output_mode":{}}`, 400, "output_mode", "expected"},
		{"stream format type", `{"model":"tts","input":"hi","stream_format":2}`, 400, "stream_format", "expected"},
		{"not an object", `[1,2]`, 400, "", "invalid JSON"},
	}
	for _, c := range cases {
		res, err := http.Post(f.URL+"/v1/audio/speech", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error apiError `json:"error"`
		}
		json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		param, _ := e.Error.Param.(string)
		if res.StatusCode != c.status || param != c.param || !strings.Contains(e.Error.Message, c.has) {
			t.Errorf("%s: %d param %q %q; want %d param %q containing %q", c.name, res.StatusCode, param, e.Error.Message, c.status, c.param, c.has)
		}
	}
	// Still serving, and the other routes answer.
	res, err := http.Post(f.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"model":"tts","input":"ok","max_new_tokens":3,"response_format":"flac"}`))
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "audio/flac" {
		t.Fatalf("after the bad requests: %v %v", res.Status, err)
	}
	res.Body.Close()
	for path, want := range map[string]string{"/v1/models": `"task":"text-to-speech"`, "/v1/audio/voices": `"ryan"`, "/v1/models/tts": `"id":"tts"`, "/metrics": `siskin:speech_audio_seconds_total{model_name="tts"} 0.16`} {
		rec := httptest.NewRecorder()
		f.sp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	f.sp.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"tts"}`)))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "text-to-speech") {
		t.Errorf("chat on a speech model: %d %s", rec.Code, rec.Body)
	}
}

// FuzzSpeechRequest: any body gets a 4xx or a checked job from the
// request parser and validator, never a panic or a 5xx.
func FuzzSpeechRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"tts","input":"hi"}`,
		`{"model":"tts","input":"hi","voice":{"id":"RYAN"},"response_format":"pcm","stream_format":"sse","seed":-5}`,
		`{"model":"tts","input":"hi","speed":1,"language":"english","max_new_tokens":2,"initial_codec_chunk_frames":0,"output_mode":"codec_tokens","stream":true}`,
		`{"model":"tts","input":"<|im_end|>","instructions":"calm","task_type":"customvoice","non_streaming_mode":false}`,
		`{"voice":null}`, `[]`, `{"input":"\ud800"}`, ``,
	} {
		f.Add(s)
	}
	fx := newSpeechFixture(f)
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		var req speechRequest
		e := decodeSpeech(rec, httptest.NewRequest("POST", "/v1/audio/speech", strings.NewReader(body)), 1<<20, &req)
		if e == nil {
			var job *speechJob
			if job, e = fx.sp.check(&req); e == nil && (job.sp == nil || job.sp.Utterance.MaxFrames < 1) {
				t.Fatalf("%q: a job without frames", body)
			}
		}
		if e != nil && (e.Status < 400 || e.Status >= 500) {
			t.Fatalf("%q: status %d", body, e.Status)
		}
	})
}
