package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coder/websocket"

	"github.com/siskin-ml/siskin/engine"
)

// WebSocket session limits (vLLM-Omni's).
const (
	wsConfigWait   = 10 * time.Second
	wsIdle         = 30 * time.Second
	wsMaxMessage   = 4 << 20
	wsMaxTextBytes = 128 << 10
)

// wsMessage is a client message of WS /v1/audio/speech/stream.
type wsMessage struct {
	Type string `json:"type"`
	Text string `json:"text"`
	speechRequest
	SplitGranularity string `json:"split_granularity"`
	StreamAudio      *bool  `json:"stream_audio"`
}

// parseWSMessage decodes and checks a client message's shape.
func parseWSMessage(data []byte) (*wsMessage, *apiError) {
	var m wsMessage
	if err := json.Unmarshal(data, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, badRequest(te.Field, "%s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return nil, badRequest("", "invalid JSON message: %v", err)
	}
	switch m.Type {
	case "session.config":
		switch m.SplitGranularity {
		case "", "none", "sentence", "clause":
		default:
			return nil, badRequest("split_granularity", "unknown split_granularity %q; use none, sentence or clause", m.SplitGranularity)
		}
	case "input.text":
		if len(m.Text) > wsMaxTextBytes {
			return nil, badRequest("text", "input.text of %d bytes; the limit is %d", len(m.Text), wsMaxTextBytes)
		}
	case "input.done", "input.cancel", "session.close":
	default:
		return nil, badRequest("type", "unknown message type %q; use session.config, input.text, input.done, input.cancel or session.close", m.Type)
	}
	return &m, nil
}

// splitText cuts the complete sentences (or clauses) off the front of
// buf: a mark followed by a space, or a CJK mark.
func splitText(buf, granularity string) (done []string, rest string) {
	if granularity == "" || granularity == "none" {
		return nil, buf
	}
	marks := ".!?。！？।؟"
	if granularity == "clause" {
		marks += ",;，；、"
	}
	start := 0
	rs := []rune(buf)
	for i, r := range rs {
		if !strings.ContainsRune(marks, r) {
			continue
		}
		wide := r > unicode.MaxASCII
		if wide || i+1 < len(rs) && unicode.IsSpace(rs[i+1]) {
			if s := strings.TrimSpace(string(rs[start : i+1])); s != "" {
				done = append(done, s)
			}
			start = i + 1
		}
	}
	return done, string(rs[start:])
}

// wsSession is one WebSocket connection's state.
type wsSession struct {
	s      *Speech
	c      *websocket.Conn
	ctx    context.Context
	cfg    *wsMessage
	buf    string
	work   chan wsUtterance
	mu     sync.Mutex
	epoch  int                // bumped by input.cancel: queued sentences of older epochs are dropped
	cancel context.CancelFunc // the running sentence's
	utt    int                // utterance index (one per input.done)
	sent   int                // sentences queued in the current utterance
}

// wsUtterance is one sentence to speak, or the end of an utterance.
type wsUtterance struct {
	epoch, utt, index int
	text              string
	end               bool // send session.done
}

// speechStream is WS /v1/audio/speech/stream.
func (s *Speech) speechStream(w http.ResponseWriter, r *http.Request) {
	// The page offers "siskin.speech" beside its key (WebSocketKeyProtocol);
	// a browser insists on one of its offers coming back.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"siskin.speech"}})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(wsMaxMessage)
	ss := &wsSession{s: s, c: c, ctx: r.Context(), work: make(chan wsUtterance, 64)}
	done := make(chan struct{})
	go func() { defer close(done); ss.speak() }()
	ss.read()
	close(ss.work)
	ss.stop()
	<-done
	c.Close(websocket.StatusNormalClosure, "")
}

// read handles client messages until the session ends.
func (ss *wsSession) read() {
	for {
		wait := wsIdle
		if ss.cfg == nil {
			wait = wsConfigWait
		}
		ctx, cancel := context.WithTimeout(ss.ctx, wait)
		typ, data, err := ss.c.Read(ctx)
		cancel()
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				ss.sendError(badRequest("", "no message for %v: closing the session", wait))
			}
			return
		}
		if typ != websocket.MessageText {
			ss.sendError(badRequest("", "binary messages are not accepted; send JSON text"))
			continue
		}
		m, e := parseWSMessage(data)
		if e == nil {
			e = ss.handle(m)
		}
		if e == errWSClose {
			return
		}
		if e != nil {
			ss.sendError(e)
		}
	}
}

var errWSClose = &apiError{Status: 200, Message: "session closed"}

// handle applies one message.
func (ss *wsSession) handle(m *wsMessage) *apiError {
	if m.Type != "session.config" && m.Type != "session.close" && ss.cfg == nil {
		return badRequest("type", "send session.config first")
	}
	switch m.Type {
	case "session.config":
		probe := m.speechRequest
		probe.Input = ptr("probe")
		probe.StreamFormat, probe.Stream = nil, nil
		if _, e := ss.s.check(&probe); e != nil {
			return e
		}
		if sp := m.Speed; sp != nil && *sp != 1 {
			return badRequest("speed", "speed %v needs the whole clip: not on the WebSocket, which streams; use 1.0", *sp)
		}
		ss.mu.Lock()
		ss.cfg = m // the speaker goroutine reads it under mu
		ss.mu.Unlock()
	case "input.text":
		if len(ss.buf)+len(m.Text) > wsMaxTextBytes {
			return badRequest("text", "buffered text would exceed %d bytes; send input.done", wsMaxTextBytes)
		}
		var done []string
		done, ss.buf = splitText(ss.buf+m.Text, ss.cfg.SplitGranularity)
		for _, t := range done {
			ss.queue(t, false)
		}
	case "input.done":
		if t := strings.TrimSpace(ss.buf); t != "" {
			ss.queue(t, false)
		}
		ss.buf = ""
		ss.queue("", true)
	case "input.cancel":
		ss.stop()
		ss.buf = ""
	case "session.close":
		return errWSClose
	}
	return nil
}

func (ss *wsSession) queue(text string, end bool) {
	ss.mu.Lock()
	u := wsUtterance{epoch: ss.epoch, utt: ss.utt, index: ss.sent, text: text, end: end}
	if end {
		ss.utt, ss.sent = ss.utt+1, 0
	} else {
		ss.sent++
	}
	ss.mu.Unlock()
	select {
	case ss.work <- u:
	default:
		ss.sendError(badRequest("", "too many sentences queued; wait for audio.done"))
	}
}

// stop cancels the running sentence and drops the queued ones.
func (ss *wsSession) stop() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.epoch++
	if ss.cancel != nil {
		ss.cancel()
	}
	ss.utt, ss.sent = ss.utt+1, 0
}

func (ss *wsSession) sendJSON(v any) error {
	data, _ := json.Marshal(v)
	return ss.c.Write(ss.ctx, websocket.MessageText, data)
}

func (ss *wsSession) sendError(e *apiError) {
	ss.sendJSON(map[string]any{"type": "error", "message": e.Message, "param": e.Param})
}

// speak runs the queued sentences one at a time.
func (ss *wsSession) speak() {
	for u := range ss.work {
		ss.mu.Lock()
		stale := u.epoch != ss.epoch
		ctx, cancel := context.WithCancel(ss.ctx)
		ss.cancel = cancel
		cfg := ss.cfg
		ss.mu.Unlock()
		if !stale {
			if u.end {
				ss.sendJSON(map[string]any{"type": "session.done", "utterance_index": u.utt, "total_sentences": u.index})
			} else if err := ss.sentence(ctx, cfg, u); err != nil {
				ss.sendError(internalError(err))
			}
		}
		cancel()
	}
}

// sentence speaks one sentence: audio.start, PCM frames, audio.done.
func (ss *wsSession) sentence(ctx context.Context, cfg *wsMessage, u wsUtterance) error {
	req := cfg.speechRequest
	req.Input = &u.text
	req.ResponseFormat, req.StreamFormat, req.Stream = ptr("pcm"), nil, nil
	job, e := ss.s.check(&req)
	if e != nil {
		ss.sendError(e)
		return nil
	}
	ch, err := ss.s.submit(ctx, job, time.Now())
	if err != nil {
		ss.sendError(submitError(err))
		return nil
	}
	ss.sendJSON(map[string]any{"type": "audio.start", "utterance_index": u.utt, "sentence_index": u.index, "sentence_text": u.text, "format": "pcm", "sample_rate": 24000, "channels": 1})
	stream := cfg.StreamAudio != nil && *cfg.StreamAudio
	var pcm []byte
	for ev := range ch {
		o := job.out(ev)
		pcm = append(pcm, o.pcm...)
		if stream && len(pcm) > 0 {
			if err := ss.c.Write(ss.ctx, websocket.MessageBinary, pcm); err != nil {
				return nil
			}
			pcm = pcm[:0]
		}
		if ev.Finish == "" {
			continue
		}
		if ev.Err != nil && ev.Finish != engine.FinishAbort {
			return fmt.Errorf("sentence %d: %w", u.index, ev.Err)
		}
	}
	if len(pcm) > 0 {
		ss.c.Write(ss.ctx, websocket.MessageBinary, pcm)
	}
	done := map[string]any{"type": "audio.done", "utterance_index": u.utt, "sentence_index": u.index, "cancelled": ctx.Err() != nil}
	if tr := job.track; tr.frames+tr.samples > 0 {
		done["usage"] = newSpeechUsage(job, tr.outFrames())
		done["time_to_first_audio_s"] = tr.ttfa
		done["audio_seconds"] = tr.audioSeconds()
		if tr.took > 0 {
			done["real_time_factor"] = tr.took / tr.audioSeconds()
		}
	}
	return ss.sendJSON(done)
}
