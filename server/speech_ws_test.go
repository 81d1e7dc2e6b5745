package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// wsEvent is a server message: JSON, or binary PCM.
type wsEvent struct {
	msg map[string]any
	pcm []byte
}

func wsRead(t *testing.T, ctx context.Context, c *websocket.Conn) wsEvent {
	t.Helper()
	typ, data, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if typ == websocket.MessageBinary {
		return wsEvent{pcm: data}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return wsEvent{msg: m}
}

func wsSend(t *testing.T, ctx context.Context, c *websocket.Conn, v string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(v)); err != nil {
		t.Fatal(err)
	}
}

// wsSentence reads audio.start, the PCM frames and audio.done.
func wsSentence(t *testing.T, ctx context.Context, c *websocket.Conn) (text string, pcm []byte, done map[string]any) {
	t.Helper()
	start := wsRead(t, ctx, c)
	if start.msg["type"] != "audio.start" {
		t.Fatalf("got %v, want audio.start", start.msg)
	}
	for {
		ev := wsRead(t, ctx, c)
		if ev.msg == nil {
			pcm = append(pcm, ev.pcm...)
			continue
		}
		if ev.msg["type"] != "audio.done" {
			t.Fatalf("got %v, want audio.done", ev.msg)
		}
		return start.msg["sentence_text"].(string), pcm, ev.msg
	}
}

// TestSpeechWebSocket: text split into sentences gives, per sentence, the
// PCM of a separate request with the same seed; input.cancel stops an
// utterance and the session goes on; bad messages get an error and the
// session goes on.
func TestSpeechWebSocket(t *testing.T) {
	f := newSpeechFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.URL, "http")+"/v1/audio/speech/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsSend(t, ctx, c, `{"type":"input.text","text":"too early"}`)
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "error" {
		t.Fatalf("text before config: %v", ev.msg)
	}
	wsSend(t, ctx, c, `{"type":"session.config","model":"tts","voice":"nope"}`)
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "error" || ev.msg["param"] != "voice" {
		t.Fatalf("bad voice: %v", ev.msg)
	}
	wsSend(t, ctx, c, `{"type":"session.config","model":"tts","voice":"ryan","seed":5,"max_new_tokens":5,"split_granularity":"sentence","stream_audio":true}`)
	wsSend(t, ctx, c, `{"type":"input.text","text":"Hello there. How "}`)
	wsSend(t, ctx, c, `{"type":"input.text","text":"are you?"}`)
	wsSend(t, ctx, c, `{"type":"input.done"}`)
	for _, want := range []string{"Hello there.", "How are you?"} {
		text, pcm, done := wsSentence(t, ctx, c)
		// audio.done carries the sentence's usage and timings.
		usage, _ := done["usage"].(map[string]any)
		ttfa, _ := done["time_to_first_audio_s"].(float64)
		rtf, _ := done["real_time_factor"].(float64)
		if usage["output_tokens"] != float64(4) || ttfa <= 0 || rtf <= 0 || done["audio_seconds"] != 4*0.08 {
			t.Errorf("audio.done %v", done)
		}
		body := `{"model":"tts","voice":"ryan","seed":5,"max_new_tokens":5,"response_format":"pcm","input":"` + want + `"}`
		res, err := http.Post(f.URL+"/v1/audio/speech", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if text != want || len(pcm) == 0 || !slices.Equal(pcm, ref) {
			t.Errorf("sentence %q (want %q): %d PCM bytes, a separate request %d (equal: %v)", text, want, len(pcm), len(ref), slices.Equal(pcm, ref))
		}
	}
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "session.done" || ev.msg["total_sentences"] != float64(2) {
		t.Fatalf("got %v, want session.done of 2 sentences", ev.msg)
	}
	// A long utterance, cancelled after its first audio.
	wsSend(t, ctx, c, `{"type":"session.config","model":"tts","voice":"ryan","max_new_tokens":4000,"stream_audio":true}`)
	wsSend(t, ctx, c, `{"type":"input.text","text":"A very long story"}`)
	wsSend(t, ctx, c, `{"type":"input.done"}`)
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "audio.start" {
		t.Fatalf("got %v, want audio.start", ev.msg)
	}
	wsSend(t, ctx, c, `{"type":"input.cancel"}`)
	for {
		ev := wsRead(t, ctx, c)
		if ev.msg != nil {
			if ev.msg["type"] != "audio.done" || ev.msg["cancelled"] != true {
				t.Fatalf("after input.cancel: %v", ev.msg)
			}
			break
		}
	}
	wsSend(t, ctx, c, `{"type":"session.config","model":"tts","voice":"ryan","max_new_tokens":3}`)
	wsSend(t, ctx, c, `{"type":"input.text","text":"Still here."}`)
	wsSend(t, ctx, c, `{"type":"input.done"}`)
	if _, pcm, _ := wsSentence(t, ctx, c); len(pcm) != 2*2*f.sp.samplesPerFrame() {
		t.Errorf("after a cancel: %d PCM bytes, want 2 frames", len(pcm))
	}
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "session.done" {
		t.Fatalf("got %v, want session.done", ev.msg)
	}
	wsSend(t, ctx, c, `{"type":"session.close"}`)
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after session.close: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.eng.Stats().Running != 0 {
		if time.Now().After(deadline) {
			t.Fatal("requests still running after the session")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSpeechWebSocketDrop: a client that drops the connection mid-
// utterance has its request freed: nothing running or reserved, and
// vllm:num_requests_running back to 0.
func TestSpeechWebSocketDrop(t *testing.T) {
	f := newSpeechFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.URL, "http")+"/v1/audio/speech/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, ctx, c, `{"type":"session.config","model":"tts","voice":"ryan","max_new_tokens":4000,"stream_audio":true}`)
	wsSend(t, ctx, c, `{"type":"input.text","text":"A very long story"}`)
	wsSend(t, ctx, c, `{"type":"input.done"}`)
	if ev := wsRead(t, ctx, c); ev.msg["type"] != "audio.start" {
		t.Fatalf("got %v, want audio.start", ev.msg)
	}
	if ev := wsRead(t, ctx, c); ev.pcm == nil {
		t.Fatalf("got %v, want PCM", ev.msg)
	}
	if s := f.eng.Stats(); s.Running != 1 {
		t.Fatalf("mid-utterance: %d running", s.Running)
	}
	c.CloseNow()
	deadline := time.Now().Add(10 * time.Second)
	for s := f.eng.Stats(); s.Running != 0 || s.KVUsedBytes != 0; s = f.eng.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("after the drop: %d running, %d bytes reserved", s.Running, s.KVUsedBytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v := metricValue(t, getMetrics(t, f.URL), `vllm:num_requests_running{model_name="tts"}`); v != 0 {
		t.Errorf("vllm:num_requests_running %v after the drop", v)
	}
}

// TestSpeechWebSocketKey: with an API key, a WebSocket is let in by the
// key as a subprotocol (what a browser can send), answered with
// "siskin.speech"; a wrong or missing key gets 401.
func TestSpeechWebSocketKey(t *testing.T) {
	f := newSpeechFixture(t)
	const key = "k/+é="
	ts := httptest.NewServer(NewSpeech(SpeechConfig{ModelName: "tts", APIKey: key}, f.eng, f.m, f.sp.tok).Handler())
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/v1/audio/speech/stream"
	for _, c := range []struct {
		protocols []string
		ok        bool
	}{
		{nil, false},
		{[]string{"siskin.speech", WebSocketKeyProtocol + base64.RawURLEncoding.EncodeToString([]byte("wrong"))}, false},
		{[]string{"siskin.speech", WebSocketKeyProtocol + base64.RawURLEncoding.EncodeToString([]byte(key))}, true},
	} {
		conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: c.protocols})
		if !c.ok {
			if err == nil || res == nil || res.StatusCode != 401 {
				t.Errorf("protocols %q: %v, want 401", c.protocols, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("protocols %q: %v", c.protocols, err)
		}
		if conn.Subprotocol() != "siskin.speech" {
			t.Errorf("subprotocol %q, want siskin.speech", conn.Subprotocol())
		}
		wsSend(t, ctx, conn, `{"type":"session.config","model":"tts","max_new_tokens":3}`)
		wsSend(t, ctx, conn, `{"type":"input.text","text":"Hi."}`)
		wsSend(t, ctx, conn, `{"type":"input.done"}`)
		if _, pcm, _ := wsSentence(t, ctx, conn); len(pcm) != 2*2*f.sp.samplesPerFrame() {
			t.Errorf("with the key: %d PCM bytes, want 2 frames", len(pcm))
		}
		conn.Close(websocket.StatusNormalClosure, "")
	}
}

// TestSplitText: sentences end at a mark and a space (or a wide mark);
// clauses also at commas and semicolons.
func TestSplitText(t *testing.T) {
	for _, c := range []struct {
		in, gran string
		done     []string
		rest     string
	}{
		{"Hi. How are", "sentence", []string{"Hi."}, " How are"},
		{"Hi. How are", "none", nil, "Hi. How are"},
		{"3.5 apples! Yes", "sentence", []string{"3.5 apples!"}, " Yes"},
		{"你好。再见", "sentence", []string{"你好。"}, "再见"},
		{"one, two; three", "clause", []string{"one,", "two;"}, " three"},
	} {
		done, rest := splitText(c.in, c.gran)
		if !slices.Equal(done, c.done) || rest != c.rest {
			t.Errorf("splitText(%q, %s) = %q, %q; want %q, %q", c.in, c.gran, done, rest, c.done, c.rest)
		}
	}
}

// FuzzSpeechWSMessage: any client message parses to a message or a 400,
// never a panic; text messages within the limit.
func FuzzSpeechWSMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"session.config","model":"tts","voice":"ryan","split_granularity":"clause","stream_audio":true,"seed":1}`,
		`{"type":"input.text","text":"Hello. World"}`, `{"type":"input.done"}`, `{"type":"input.cancel"}`,
		`{"type":"session.close"}`, `{"type":"x"}`, `{"type":"session.config","split_granularity":5}`, `[1]`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		m, e := parseWSMessage([]byte(data))
		if (m == nil) == (e == nil) || e != nil && e.Status != 400 {
			t.Fatalf("%q: %v, %v", data, m, e)
		}
		if m != nil && m.Type == "input.text" && len(m.Text) > wsMaxTextBytes {
			t.Fatalf("%q: oversize text accepted", data)
		}
		done, rest := splitText(data, "clause")
		if n := utf8.RuneCountInString(strings.Join(done, "") + rest); n > utf8.RuneCountInString(data) {
			t.Fatalf("%q: split grew to %d bytes", data, n)
		}
	})
}
