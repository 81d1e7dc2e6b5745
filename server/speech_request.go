package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/tokenizer"
)

// speechRequest is the body of POST /v1/audio/speech: OpenAI's fields and
// vLLM-Omni's extensions.
type speechRequest struct {
	Model                   string          `json:"model"`
	Input                   *string         `json:"input"`
	Voice                   json.RawMessage `json:"voice"`
	Instructions            string          `json:"instructions"`
	ResponseFormat          *string         `json:"response_format"`
	Speed                   *float64        `json:"speed"`
	StreamFormat            *string         `json:"stream_format"`
	Stream                  *bool           `json:"stream"`
	Language                *string         `json:"language"`
	TaskType                *string         `json:"task_type"`
	Seed                    *int64          `json:"seed"`
	MaxNewTokens            *int            `json:"max_new_tokens"`
	InitialCodecChunkFrames *int            `json:"initial_codec_chunk_frames"`
	NonStreamingMode        *bool           `json:"non_streaming_mode"`
	OutputMode              *string         `json:"output_mode"`
}

// Speech request bounds.
const (
	maxInstructionChars = 500  // vLLM-Omni's cap
	maxSpeechNewTokens  = 4096 // max_new_tokens upper bound
	maxFirstChunkFrames = 1024
)

// speechJob is a checked request: what the engine runs and how the
// answer is written.
type speechJob struct {
	sp         *engine.Speech
	format     string // wav, pcm, flac
	stream     string // "", "audio" or "sse"
	speed      float64
	textTokens int
	cached     int    // talker prompt rows from the conditioning cache
	salt       string // the conditioning salt (engine.Request.CacheSalt)
	track      *speechTrack
}

// decodeSpeech reads the body into req, naming the field of a type error.
func decodeSpeech(w http.ResponseWriter, r *http.Request, limit int64, req *speechRequest) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &apiError{Status: 413, Message: fmt.Sprintf("request body exceeds %d bytes", limit), Type: "invalid_request_error"}
		}
		return badRequest("", "reading the request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badRequest(te.Field, "%s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return badRequest("", "invalid JSON body: %v", err)
	}
	if dec.More() {
		return badRequest("", "invalid JSON body: data after the top-level object")
	}
	return nil
}

// check validates every field and builds the job.
func (s *Speech) check(req *speechRequest) (*speechJob, *apiError) {
	if e := s.checkModel(req.Model); e != nil {
		return nil, e
	}
	if req.Input == nil || strings.TrimSpace(*req.Input) == "" {
		return nil, badRequest("input", "input is required and must not be empty")
	}
	if n := len([]rune(*req.Input)); n > s.cfg.MaxInputChars {
		return nil, badRequest("input", "input has %d characters; the limit is %d", n, s.cfg.MaxInputChars)
	}
	voice, e := s.voice(req.Voice)
	if e != nil {
		return nil, e
	}
	lang, e := s.language(req.Language)
	if e != nil {
		return nil, e
	}
	job := &speechJob{}
	if e := s.checkOutput(req, job); e != nil {
		return nil, e
	}
	if e := s.checkOptions(req); e != nil {
		return nil, e
	}
	nonStreaming := req.NonStreamingMode == nil || *req.NonStreamingMode
	ids, textTokens := s.speechIDs(*req.Input, req.Instructions)
	v := qwen3tts.Voice{Speaker: voice, Language: lang, NonStreaming: nonStreaming, Instruct: s.instructIDs(req.Instructions)}
	u := s.m.Cfg.NewRequest(ids, v)
	job.salt = s.conditioningSalt(v, req.Instructions)
	u.MaxFrames = s.cfg.DefaultMaxFrames
	if req.MaxNewTokens != nil {
		u.MaxFrames = *req.MaxNewTokens - 1 // the last talker step makes no frame (TS §7)
	}
	if req.Seed != nil {
		u.Seed, u.Seeded = uint64(*req.Seed), true
	}
	job.sp = &engine.Speech{Utterance: u, Codes: req.OutputMode != nil && *req.OutputMode == "codec_tokens"}
	if req.InitialCodecChunkFrames != nil {
		job.sp.FirstChunk = *req.InitialCodecChunkFrames
	}
	job.textTokens = textTokens
	return job, nil
}

func (s *Speech) checkModel(name string) *apiError {
	if name == "" {
		return badRequest("model", "model is required (this server speaks with %q)", s.cfg.ModelName)
	}
	if name != s.cfg.ModelName {
		return &apiError{Status: 404, Message: fmt.Sprintf("the model %q does not exist (speech model here: %q)", name, s.cfg.ModelName), Type: "NotFoundError", Param: "model", Code: "model_not_found"}
	}
	return nil
}

// voice resolves the voice field (a name or {"id": name}) to a speaker,
// case-insensitively; absent means the first speaker.
func (s *Speech) voice(raw json.RawMessage) (string, *apiError) {
	speakers := s.m.Cfg.SupportedSpeakers()
	if len(raw) == 0 || string(raw) == "null" {
		return speakers[0], nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		var obj struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", badRequest("voice", "voice must be a voice name or {\"id\": name}; valid voices: %s", strings.Join(speakers, ", "))
		}
		name = obj.ID
	}
	for _, sp := range speakers {
		if strings.EqualFold(sp, name) {
			return sp, nil
		}
	}
	return "", badRequest("voice", "unknown voice %q; valid voices: %s", name, strings.Join(speakers, ", "))
}

// language accepts Auto or one of the model's languages, any case.
func (s *Speech) language(l *string) (string, *apiError) {
	if l == nil || *l == "" || strings.EqualFold(*l, "auto") {
		return "auto", nil
	}
	for _, k := range s.m.Cfg.SupportedLanguages() {
		if strings.EqualFold(k, *l) {
			return k, nil
		}
	}
	return "", badRequest("language", "unknown language %q; valid: %s", *l, strings.Join(s.m.Cfg.SupportedLanguages(), ", "))
}

// checkOutput reads response_format, stream_format, stream, speed and
// output_mode into job.
func (s *Speech) checkOutput(req *speechRequest, job *speechJob) *apiError {
	job.format = "wav"
	if f := req.ResponseFormat; f != nil && *f != "" {
		switch *f {
		case "wav", "pcm", "flac":
			job.format = *f
		case "mp3", "opus", "aac":
			return badRequest("response_format", "response_format %q needs an encoder siskin does not have (pure Go, no patented or cgo codecs); use wav, pcm or flac", *f)
		default:
			return badRequest("response_format", "unknown response_format %q; use wav, pcm or flac", *f)
		}
	}
	if sf := req.StreamFormat; sf != nil && *sf != "" {
		if *sf != "audio" && *sf != "sse" {
			return badRequest("stream_format", "unknown stream_format %q; use audio or sse", *sf)
		}
		job.stream = *sf
	} else if req.Stream != nil && *req.Stream {
		job.stream = "sse"
	}
	if req.Stream != nil && !*req.Stream && job.stream != "" {
		job.stream = "" // stream: false wins, as in the legacy API
	}
	if job.stream != "" && job.format == "flac" {
		return badRequest("response_format", "streaming needs response_format wav or pcm, not flac")
	}
	if m := req.OutputMode; m != nil && *m != "" && *m != "audio" && *m != "codec_tokens" {
		return badRequest("output_mode", "unknown output_mode %q; use audio or codec_tokens", *m)
	}
	if req.OutputMode != nil && *req.OutputMode == "codec_tokens" && job.stream == "audio" {
		return badRequest("stream_format", "output_mode codec_tokens streams as sse, not audio")
	}
	return checkSpeed(req, job)
}

// checkSpeed reads speed: a pitch-preserving time stretch of the whole
// clip, so not with streaming (as vLLM-Omni) nor with codec tokens.
func checkSpeed(req *speechRequest, job *speechJob) *apiError {
	job.speed = 1
	sp := req.Speed
	if sp == nil {
		return nil
	}
	if math.IsNaN(*sp) || *sp < 0.25 || *sp > 4 {
		return badRequest("speed", "speed %v is outside [0.25, 4]", *sp)
	}
	if *sp == 1 {
		return nil
	}
	if job.stream != "" {
		return badRequest("speed", "speed %v needs the whole clip: not with streaming; use 1.0 or a buffered response", *sp)
	}
	if req.OutputMode != nil && *req.OutputMode == "codec_tokens" {
		return badRequest("speed", "speed %v applies to audio, not to output_mode codec_tokens", *sp)
	}
	job.speed = *sp
	return nil
}

// checkOptions bounds the remaining fields.
func (s *Speech) checkOptions(req *speechRequest) *apiError {
	if n := len([]rune(req.Instructions)); n > maxInstructionChars {
		return badRequest("instructions", "instructions has %d characters; the limit is %d", n, maxInstructionChars)
	}
	if req.Instructions != "" && !s.m.Cfg.AcceptsInstruct() {
		return badRequest("instructions", "this model (tts_model_size %q) takes no instructions: the official Qwen3-TTS code drops them for 0.6B CustomVoice models; leave instructions empty or serve a 1.7B model", s.m.Cfg.ModelSize)
	}
	if t := req.TaskType; t != nil && *t != "" && !strings.EqualFold(*t, "CustomVoice") {
		return badRequest("task_type", "task_type %q does not match this model (CustomVoice)", *t)
	}
	if n := req.MaxNewTokens; n != nil && (*n < 2 || *n > maxSpeechNewTokens) {
		return badRequest("max_new_tokens", "max_new_tokens %d is outside [2, %d] (the last talker step makes no frame)", *n, maxSpeechNewTokens)
	}
	if n := req.InitialCodecChunkFrames; n != nil && (*n < 0 || *n > maxFirstChunkFrames) {
		return badRequest("initial_codec_chunk_frames", "initial_codec_chunk_frames %d is outside [0, %d]", *n, maxFirstChunkFrames)
	}
	return nil
}

// speechIDs wraps and tokenizes the input as the official code does;
// the user's text is encoded without special tokens, so it cannot inject
// any. textTokens counts the input and instructions tokens (usage).
func (s *Speech) speechIDs(input, instructions string) (ids []int, textTokens int) {
	special := tokenizer.EncodeOptions{ParseSpecial: true}
	ids = s.tok.Encode("<|im_start|>assistant\n", special)
	text := s.tok.Encode(input, tokenizer.EncodeOptions{})
	ids = append(ids, text...)
	ids = append(ids, s.tok.Encode("<|im_end|>\n<|im_start|>assistant\n", special)...)
	textTokens = len(text)
	if instructions != "" {
		textTokens += len(s.tok.Encode(instructions, tokenizer.EncodeOptions{}))
	}
	return slices.Clip(ids), textTokens
}

// instructIDs is the instruct block the official code prepends,
// "<|im_start|>user\n{instructions}<|im_end|>\n", tokenized; the user's
// text is encoded without special tokens, so it cannot inject any. Empty
// instructions are none (I:820-825).
func (s *Speech) instructIDs(instructions string) []int {
	if instructions == "" {
		return nil
	}
	special := tokenizer.EncodeOptions{ParseSpecial: true}
	ids := s.tok.Encode("<|im_start|>", special)
	ids = append(ids, s.tok.Encode("user\n"+instructions, tokenizer.EncodeOptions{})...)
	ids = append(ids, s.tok.Encode("<|im_end|>\n", special)...)
	return slices.Clip(ids)
}

// conditioningSalt keys the talker's conditioning cache as vLLM-Omni
// keys its cache_salt: the first 32 hex digits of SHA-256 over the
// NUL-joined model, task type, language, voice and instructions (not the
// input text, which the cached rows do not depend on).
func (s *Speech) conditioningSalt(v qwen3tts.Voice, instructions string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{s.cfg.ModelName, s.m.Cfg.ModelType, v.Language, v.Speaker, instructions}, "\x00")))
	return hex.EncodeToString(sum[:16])
}
