package web_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/model/qwen3tts"
	"github.com/siskin-ml/siskin/model/qwen3tts/codec"
	"github.com/siskin-ml/siskin/model/qwen3tts/synth"
	"github.com/siskin-ml/siskin/server"
	"github.com/siskin-ml/siskin/tokenizer"
)

// samplesPerFrame is Qwen3-TTS's codec hop: 24000 Hz / 12.5 frames/s.
const samplesPerFrame = 1920

// newSpeech serves a `siskin synth --arch qwen3_tts --shape tiny` folder
// (random weights, the real shapes but smaller).
func newSpeech(t *testing.T, apiKey string) (*server.Speech, *engine.Engine) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tts")
	if _, err := synth.Write(dir, synth.Options{Shape: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := qwen3tts.Load(dir)
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
	eng := engine.NewSpeechPipeline(engine.Config{MaxNumSeqs: 4}, m, dec)
	t.Cleanup(func() { eng.Close(); m.Close() })
	return server.NewSpeech(server.SpeechConfig{ModelName: "tts-tiny", APIKey: apiKey}, eng, m, tok), eng
}

// wsTraffic is what the browser's network layer saw on the speech
// WebSocket: independent of the page's own counting.
type wsTraffic struct {
	mu        sync.Mutex
	sentences []int // PCM bytes of each sentence, audio.start to audio.done
	inside    bool
	stray     int // PCM bytes outside a sentence
	errors    []string
}

func (w *wsTraffic) listen(ev any) {
	e, ok := ev.(*network.EventWebSocketFrameReceived)
	if !ok || e.Response == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Response.Opcode != 1 {
		if w.inside {
			w.sentences[len(w.sentences)-1] += len(e.Response.PayloadData)
		} else {
			w.stray += len(e.Response.PayloadData)
		}
		return
	}
	var m struct{ Type, Message string }
	json.Unmarshal(e.Response.PayloadData, &m)
	switch m.Type {
	case "audio.start":
		w.sentences = append(w.sentences, 0)
		w.inside = true
	case "audio.done":
		w.inside = false
	case "error":
		w.errors = append(w.errors, m.Message)
	}
}

func (w *wsTraffic) snapshot() (sentences []int, stray int, errs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.sentences...), w.stray, append([]string(nil), w.errors...)
}

type voiceHook struct {
	Sessions, Open, Pieces, Chunks, Bytes, Samples, DuringAnswer int
	Errors                                                       []string
}

func readHook(t *testing.T, ctx context.Context) voiceHook {
	t.Helper()
	raw := eval[string](t, ctx, `JSON.stringify(window.siskinVoice)`)
	var h voiceHook
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatalf("window.siskinVoice %s: %v", raw, err)
	}
	return h
}

// capture writes a screenshot of what the tab shows now.
func capture(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// TestVoice serves the tiny Spark twin and a tiny Qwen3-TTS together,
// with an API key, behind a path prefix, and turns "speak answers" on:
// the page opens the speech WebSocket (the key as a subprotocol), sends
// the answer's sentences while it streams, gets PCM for each one, some
// of it before the answer ends, and schedules every sample it got on its
// AudioContext (the page's count equals the bytes Chromium's network
// layer saw / 2, a whole number of 1920-sample frames a sentence). Then
// a long read-aloud is stopped, and the speech engine's running requests
// drop to 0. No console errors.
func TestVoice(t *testing.T) {
	const key, prefix = "voice-key", "/proxy"
	b := newBackend(t, 25*time.Millisecond)
	sp, speechEng := newSpeech(t, key)
	ts := mount(t, (&server.Both{LLM: b.server(key), Speech: sp}).Handler(), prefix)
	var errs consoleErrors
	var traffic wsTraffic
	browser := newBrowser(t)
	tab, cancel := chromedp.NewContext(browser, chromedp.WithListener(func(ev any) { errs.listen(ev); traffic.listen(ev) }))
	t.Cleanup(cancel)

	do(t, tab, "load", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(ts.URL+prefix+"/"))
	waitFor(t, tab, "the key dialog", `document.getElementById('key-dialog').open`, 10*time.Second)
	do(t, tab, "key", chromedp.SendKeys(chromedp.ID("key-input"), key+kb.Enter))
	waitFor(t, tab, "the voices", `!document.getElementById('voice').hidden && document.querySelector('#voice-name').options.length > 0`, 10*time.Second)
	if got := eval[string](t, tab, `[...document.querySelector('#model').options].map((o) => o.value).join() + ' / ' + document.querySelector('#speech-model').value`); got != "spark-tiny / tts-tiny" {
		t.Fatalf("chat models / speech model: %q, want the speech model apart from the chat models", got)
	}
	if n := eval[int](t, tab, `document.querySelector('#voice-language').options.length`); n < 2 {
		t.Fatalf("%d languages offered", n)
	}
	const maxFrames = 5 // "Longest sentence" 0.4 s: max_new_tokens 6
	setField(t, tab, "speech-max", "0.4")
	setField(t, tab, "voice-name", "ryan")
	setField(t, tab, "temperature", "0")
	setField(t, tab, "max-tokens", "80")
	setField(t, tab, "thinking", "off")
	do(t, tab, "speak on", chromedp.Click(chromedp.ID("speak")))

	do(t, tab, "send", chromedp.SendKeys(chromedp.ID("input"), "Hello"+kb.Enter))
	waitFor(t, tab, "the answer and its speech", answerDone+` && window.siskinVoice.open === 0 && window.siskinVoice.sessions === 1`, 30*time.Second)
	h := readHook(t, tab)
	sentences, stray, wsErrs := traffic.snapshot()
	if len(h.Errors) > 0 || len(wsErrs) > 0 {
		t.Fatalf("speech errors: page %q, server %q", h.Errors, wsErrs)
	}
	if h.Pieces < 2 || len(sentences) != h.Pieces {
		t.Fatalf("the page sent %d pieces of text, the server spoke %d sentences; want at least 2, equal", h.Pieces, len(sentences))
	}
	total := stray
	for i, n := range sentences {
		if n == 0 || n%(2*samplesPerFrame) != 0 || n/(2*samplesPerFrame) > maxFrames {
			t.Errorf("sentence %d: %d PCM bytes, want 1 to %d whole frames of %d samples", i, n, maxFrames, samplesPerFrame)
		}
		total += n
	}
	if stray != 0 || h.Bytes != total || h.Samples != total/2 || h.Samples%samplesPerFrame != 0 {
		t.Fatalf("the page scheduled %d samples (%d bytes, %d chunks); the server sent %d bytes (%d outside sentences) = %d frames x %d",
			h.Samples, h.Bytes, h.Chunks, total, stray, total/(2*samplesPerFrame), samplesPerFrame)
	}
	if h.DuringAnswer == 0 {
		t.Fatal("no audio was scheduled while the answer still streamed")
	}
	t.Logf("%d sentences, %d frames, %d of %d chunks while the answer streamed", len(sentences), h.Samples/samplesPerFrame, h.DuringAnswer, h.Chunks)
	msgs := stored(t, tab)
	stats := eval[string](t, tab, `document.querySelector('#log li.assistant .stats').textContent`)
	if len(msgs) != 2 || msgs[1].Error != "" || !strings.Contains(stats, "first audio") || !strings.Contains(stats, "real time") {
		t.Fatalf("answer %+v, stats line %q: want first audio and real-time factor", msgs, stats)
	}

	if bad := eval[[]string](t, tab, contrastScript); len(bad) > 0 {
		t.Errorf("text below WCAG AA contrast:\n%s", strings.Join(bad, "\n"))
	}

	// Screenshots: the chat and the voice settings, desktop and phone.
	dir := screenshotDir(t)
	eval[chromedp.Void](t, tab, `document.getElementById('voice').scrollIntoView()`)
	capture(t, tab, dir, "voice-desktop")
	do(t, tab, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait), chromedp.Reload())
	waitFor(t, tab, "the conversation", `document.querySelectorAll('#log li.msg').length === 2 && document.querySelector('#voice-name').options.length > 0`, 10*time.Second)
	capture(t, tab, dir, "voice-chat-phone")
	eval[chromedp.Void](t, tab, `document.getElementById('settings').open = true; document.getElementById('voice').scrollIntoView()`)
	capture(t, tab, dir, "voice-phone")
	eval[chromedp.Void](t, tab, `document.getElementById('settings').open = false`)
	do(t, tab, "desktop", chromedp.EmulateViewport(1280, 800), chromedp.Reload())
	waitFor(t, tab, "the conversation", `document.querySelectorAll('#log li.msg').length === 2 && document.querySelector('#voice-name').options.length > 0`, 10*time.Second)

	// A long read-aloud, stopped while it speaks: the server's work ends.
	setField(t, tab, "speech-max", "300")
	before := readHook(t, tab).Samples
	do(t, tab, "read aloud", chromedp.Click(chromedp.CSS(`#log li.assistant .read-aloud`)))
	waitFor(t, tab, "audio of the read-aloud", `window.siskinVoice.samples > `+itoa(before)+` && !document.getElementById('stop-speech').hidden`, 20*time.Second)
	if r := speechEng.Stats().Running; r != 1 {
		t.Fatalf("speech requests running while reading aloud: %d, want 1", r)
	}
	do(t, tab, "stop speaking", chromedp.Click(chromedp.ID("stop-speech")))
	deadline := time.Now().Add(3 * time.Second)
	for speechEng.Stats().Running != 0 {
		if time.Now().After(deadline) {
			t.Fatal("speech requests still running 3 s after Stop speaking")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, tab, "the page to go quiet", `document.getElementById('stop-speech').hidden && window.siskinVoice.open === 0`, 5*time.Second)
	testSpeechOnly(t, tab, mount(t, sp.Handler(), ""), key, &errs)
	for _, e := range errs.list() {
		if !strings.Contains(e, "401") { // the page's first look, before it has the key
			t.Errorf("console error: %s", e)
		}
	}
}

// testSpeechOnly loads the page from a server of the speech model alone
// (siskin serve -m TTS_DIR): it offers no chat model, and reads typed
// text aloud, a sentence an utterance.
func testSpeechOnly(t *testing.T, browser context.Context, ts *httptest.Server, key string, errs *consoleErrors) {
	tab := newTab(t, browser, errs)
	do(t, tab, "load", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(ts.URL+"/"))
	waitFor(t, tab, "the key dialog", `document.getElementById('key-dialog').open`, 10*time.Second)
	do(t, tab, "key", chromedp.SendKeys(chromedp.ID("key-input"), key+kb.Enter))
	waitFor(t, tab, "speech-only mode", `document.getElementById('send').textContent === 'Speak' && !document.querySelector('label.model').getClientRects().length && !document.getElementById('system').getClientRects().length`, 10*time.Second)
	setField(t, tab, "speech-max", "0.4")
	do(t, tab, "speak", chromedp.SendKeys(chromedp.ID("input"), "Hello there. How are you?"+kb.Enter))
	waitFor(t, tab, "the speech", `window.siskinVoice.sessions === 1 && window.siskinVoice.open === 0`, 20*time.Second)
	h := readHook(t, tab)
	if len(h.Errors) > 0 || h.Pieces != 2 || h.Samples == 0 || h.Samples%samplesPerFrame != 0 || h.Samples > 2*5*samplesPerFrame {
		t.Fatalf("speech-only page: %+v, want 2 sentences of 1 to 5 frames each", h)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#log li.user').length`); n != 1 {
		t.Fatalf("%d messages shown, want the typed one", n)
	}
	capture(t, tab, screenshotDir(t), "speech-only-desktop")
	// The audio plays out: every scheduled buffer ends, and Stop speaking goes.
	waitFor(t, tab, "the audio to play out", `document.getElementById('stop-speech').hidden`, 10*time.Second)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
