package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/siskin-ml/siskin/chat"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/internal/browsertest"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/kv"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
	"github.com/siskin-ml/siskin/server"
)

// slowed makes every engine step take at least delay, so that an answer
// streams over several animation frames and a long one is still running
// when the test presses Stop.
type slowed struct {
	model.Model
	delay time.Duration
}

func (s *slowed) ForwardBatch(seqs []model.Seq) ([][]float32, error) {
	t := time.Now()
	out, err := s.Model.ForwardBatch(seqs)
	time.Sleep(s.delay - time.Since(t))
	return out, err
}

func (s *slowed) Forward(c *kv.Cache, tokens []int, all bool) ([]float32, error) {
	return model.Forward(s, c, tokens, all)
}

// backend is a loaded tiny Spark model behind an engine, shared by the
// servers of a test.
type backend struct {
	eng  *engine.Engine
	lm   *load.Loaded
	tmpl *chat.Template
}

func newBackend(t *testing.T, delay time.Duration) *backend {
	t.Helper()
	lm, err := load.Open(testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "bf16"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.FromHFDir(lm.Source.Path)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(&slowed{Model: lm.Model, delay: delay},
		engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 256, KVCacheBytes: 64 << 20})
	t.Cleanup(func() { eng.Close(); lm.Close() })
	return &backend{eng: eng, lm: lm, tmpl: tmpl}
}

// serve starts a siskin server as `siskin serve` configures it for
// spark2_5 (its tool and reasoning parsers), mounted under prefix.
func (b *backend) serve(t *testing.T, apiKey, prefix string) *httptest.Server {
	t.Helper()
	return mount(t, b.server(apiKey).Handler(), prefix)
}

func (b *backend) server(apiKey string) *server.Server {
	return server.New(server.Config{
		ModelName: "spark-tiny", APIKey: apiKey, Defaults: sample.Defaults(),
		ToolParser: load.ToolParserFor("spark2_5"), ReasoningParser: load.ReasoningParserFor("spark2_5"),
	}, b.eng, b.lm.Tokenizer, b.tmpl)
}

// mount serves h under prefix, as a reverse proxy would.
func mount(t *testing.T, h http.Handler, prefix string) *httptest.Server {
	t.Helper()
	if prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
		h = mux
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// consoleErrors collects what a tab reports as an error: console.error
// calls, uncaught exceptions and error log entries (failed loads).
type consoleErrors struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleErrors) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			msg = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg = fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, d.Text)
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			msg = "log (" + string(e.Entry.Source) + "): " + e.Entry.Text + " " + e.Entry.URL
		}
	}
	if msg != "" {
		c.mu.Lock()
		c.errs = append(c.errs, msg)
		c.mu.Unlock()
	}
}

func (c *consoleErrors) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

// newBrowser starts headless Chromium with a fresh profile.
func newBrowser(t *testing.T) context.Context { return browsertest.New(t) }

// newTab opens a tab whose console errors land in errs.
func newTab(t *testing.T, browser context.Context, errs *consoleErrors) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithListener(errs.listen))
	t.Cleanup(cancel)
	return ctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it is true.
func waitFor(t *testing.T, ctx context.Context, what, predicate string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, predicate, err)
	}
}

// setField sets a settings field as typing would (the page saves on input).
func setField(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event('input')); })()`, id, value))
}

type storedMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Reasoning string `json:"reasoning"`
	Finish    string `json:"finish"`
	Error     string `json:"error"`
	Stats     struct {
		Tokens     int     `json:"tokens"`
		TTFTms     float64 `json:"ttft_ms"`
		TokensPerS float64 `json:"tokens_per_s"`
	} `json:"stats"`
}

// stored is the conversation the page keeps in localStorage.
func stored(t *testing.T, ctx context.Context) []storedMessage {
	t.Helper()
	raw := eval[string](t, ctx, `localStorage.getItem('siskin.chat:' + location.pathname) || '{}'`)
	var s struct{ Messages []storedMessage }
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("stored conversation: %v: %s", err, raw)
	}
	return s.Messages
}

// greedy asks the API itself for the answer the page should show.
func greedy(t *testing.T, url, user string, maxTokens int, thinking bool) (content, reasoning string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"model": "spark-tiny", "messages": []map[string]string{{"role": "user", "content": user}},
		"temperature": 0, "max_tokens": maxTokens, "chat_template_kwargs": map[string]bool{"enable_thinking": thinking},
	})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content          *string `json:"content"`
				ReasoningContent *string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("greedy answer: %v (status %d)", err, resp.StatusCode)
	}
	m := out.Choices[0].Message
	if m.Content != nil {
		content = *m.Content
	}
	if m.ReasoningContent != nil {
		reasoning = *m.ReasoningContent
	}
	return content, reasoning
}

// running reads vllm:num_requests_running from /metrics.
func running(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "vllm:num_requests_running{") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			return int(v)
		}
	}
	t.Fatal("no vllm:num_requests_running in /metrics")
	return 0
}

func screenshotDir(t *testing.T) string {
	if d := os.Getenv("SISKIN_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// screenshot reloads the page at a viewport size (the settings panel opens
// by default only on wide screens) and writes a PNG.
func screenshot(t *testing.T, ctx context.Context, dir, name string, width, height int64, mobile bool) {
	t.Helper()
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait)
	}
	do(t, ctx, "viewport "+name, chromedp.EmulateViewport(width, height, opts...), chromedp.Reload())
	waitFor(t, ctx, "the conversation after reload", `document.querySelectorAll('#log li.msg').length >= 4 && document.querySelector('#model').options.length > 0`, 10*time.Second)
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

// snapshotAnswers records the text of the last answer (content and
// reasoning) at every change of the conversation, to see it stream.
const snapshotAnswers = `(() => {
  window.__snaps = [];
  new MutationObserver(() => {
    const a = document.querySelector('#log li.assistant:last-child');
    if (!a) return;
    const t = a.querySelector('.reasoning .text').textContent + '|' + a.querySelector('.content').textContent;
    if (window.__snaps[window.__snaps.length - 1] !== t) window.__snaps.push(t);
  }).observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
})()`

const answerDone = `document.getElementById('stop').hidden && !document.querySelector('#log li[aria-busy]')`

// TestChatPage drives the page in headless Chromium against a real server
// on the tiny Spark twin: a streamed greedy answer equal to the API's,
// Stop mid-stream (the server's running requests drop to 0), regenerate,
// the conversation back after a reload, screenshots, and the API key
// behind a path prefix. No console errors are allowed.
func TestChatPage(t *testing.T) {
	b := newBackend(t, 25*time.Millisecond)
	ts := b.serve(t, "", "")
	var errs consoleErrors
	tab := newTab(t, newBrowser(t), &errs)

	do(t, tab, "load", chromedp.Navigate(ts.URL+"/"))
	waitFor(t, tab, "the model list", `document.querySelector('#model').options.length === 1`, 10*time.Second)
	if got := eval[string](t, tab, `document.querySelector('#model').value`); got != "spark-tiny" {
		t.Fatalf("model picker shows %q, want spark-tiny", got)
	}

	// A greedy answer streams in, and is the API's own greedy answer.
	const question, n = "Hello", 40
	wantContent, wantReasoning := greedy(t, ts.URL, question, n, false)
	setField(t, tab, "temperature", "0")
	setField(t, tab, "max-tokens", strconv.Itoa(n))
	setField(t, tab, "thinking", "off")
	eval[chromedp.Void](t, tab, snapshotAnswers)
	do(t, tab, "send", chromedp.SendKeys(chromedp.ID("input"), question+kb.Enter))
	waitFor(t, tab, "the greedy answer", `document.querySelectorAll('#log li.assistant').length === 1 && `+answerDone, 20*time.Second)
	msgs := stored(t, tab)
	if len(msgs) != 2 || msgs[0].Content != question {
		t.Fatalf("stored conversation %+v, want the question and one answer", msgs)
	}
	a := msgs[1]
	if a.Error != "" || a.Content != wantContent || a.Reasoning != wantReasoning {
		t.Fatalf("page's answer:\n content %q\n reasoning %q\n error %q\nAPI's greedy answer:\n content %q\n reasoning %q", a.Content, a.Reasoning, a.Error, wantContent, wantReasoning)
	}
	if a.Stats.Tokens != n || a.Finish != "length" || a.Stats.TTFTms <= 0 || a.Stats.TokensPerS <= 0 {
		t.Fatalf("answer stats %+v finish %q: want %d tokens, finish length, a time to first token and a speed", a.Stats, a.Finish, n)
	}
	snaps := eval[[]string](t, tab, `window.__snaps`)
	if len(snaps) < 5 {
		t.Fatalf("the answer appeared in %d steps, want it to stream (at least 5): %q", len(snaps), snaps)
	}
	stats := eval[string](t, tab, `document.querySelector('#log li.assistant .stats').textContent`)
	if !strings.Contains(stats, "first token") || !strings.Contains(stats, "tokens/s") {
		t.Fatalf("stats line %q lacks time to first token or tokens/s", stats)
	}

	// A long answer (reasoning, folded) is stopped mid-stream.
	setField(t, tab, "max-tokens", "3000")
	setField(t, tab, "thinking", "")
	do(t, tab, "send long", chromedp.SendKeys(chromedp.ID("input"), "Tell me a long story"+kb.Enter))
	waitFor(t, tab, "the long answer to stream", `(() => { const a = document.querySelector('#log li.assistant:last-child'); return a.querySelector('.reasoning .text').textContent.length + a.querySelector('.content').textContent.length > 40; })()`, 20*time.Second)
	if r := running(t, ts.URL); r != 1 {
		t.Fatalf("vllm:num_requests_running = %d while the answer streams, want 1", r)
	}
	if open := eval[bool](t, tab, `document.querySelector('#log li.assistant:last-child details.reasoning').open`); open {
		t.Fatal("reasoning is shown unfolded, want it folded")
	}
	do(t, tab, "stop", chromedp.Click(chromedp.ID("stop")))
	deadline := time.Now().Add(3 * time.Second)
	for running(t, ts.URL) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("vllm:num_requests_running did not drop to 0 within 3 s of Stop")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, tab, "the page to end the answer", answerDone, 10*time.Second)
	msgs = stored(t, tab)
	if len(msgs) != 4 || msgs[3].Finish != "stopped" || msgs[3].Stats.Tokens <= 0 || msgs[3].Stats.Tokens >= 3000 {
		t.Fatalf("after Stop the stored answer is %+v, want finish stopped after some tokens", msgs[len(msgs)-1])
	}

	// Regenerate replaces the stopped answer.
	setField(t, tab, "max-tokens", "8")
	do(t, tab, "regenerate", chromedp.Click(chromedp.ID("regenerate")))
	waitFor(t, tab, "the regenerated answer", `document.querySelectorAll('#log li.assistant').length === 2 && `+answerDone, 20*time.Second)
	msgs = stored(t, tab)
	if len(msgs) != 4 || msgs[3].Finish != "length" || msgs[3].Stats.Tokens != 8 {
		t.Fatalf("after Regenerate the stored answer is %+v, want 8 new tokens in its place", msgs[len(msgs)-1])
	}

	// The conversation survives a reload; screenshots at two widths.
	dir := screenshotDir(t)
	screenshot(t, tab, dir, "chat-desktop", 1280, 800, false)
	screenshot(t, tab, dir, "chat-phone", 390, 844, true)
	if got := eval[string](t, tab, `document.querySelector('#log li.user .body').textContent`); got != question {
		t.Fatalf("after reload the first message is %q, want %q", got, question)
	}
	again := stored(t, tab)
	if len(again) != 4 || again[1].Content != wantContent {
		t.Fatalf("after reload the conversation is %+v", again)
	}
	testExport(t, tab, again)
	testRendering(t, tab, dir)
	if e := errs.list(); len(e) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(e, "\n"))
	}

	testAPIKey(t, b, tab)
}

// testAPIKey loads the page from a server with --api-key behind a path
// prefix: it asks for the key, says clearly when the key is wrong, and
// chats once given the right one. The only errors allowed in the console
// are the 401 answers themselves.
func testAPIKey(t *testing.T, b *backend, browser context.Context) {
	ts := b.serve(t, "test-key", "/proxy")
	var errs consoleErrors
	tab := newTab(t, browser, &errs)
	do(t, tab, "load behind /proxy", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(ts.URL+"/proxy/"))
	waitFor(t, tab, "the key dialog", `document.getElementById('key-dialog').open`, 10*time.Second)
	do(t, tab, "wrong key", chromedp.SendKeys(chromedp.ID("key-input"), "wrong-key"+kb.Enter))
	waitFor(t, tab, "the wrong-key message", `document.getElementById('key-dialog').open && !document.getElementById('key-error').hidden`, 10*time.Second)
	if msg := eval[string](t, tab, `document.getElementById('key-error').textContent`); !strings.Contains(msg, "refused this API key") {
		t.Fatalf("wrong-key message %q", msg)
	}
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir(t), "api-key-wrong.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, tab, "right key", chromedp.SendKeys(chromedp.ID("key-input"), "test-key"+kb.Enter))
	waitFor(t, tab, "the model list", `!document.getElementById('key-dialog').open && document.querySelector('#model').options.length === 1`, 10*time.Second)
	// Greedy: with the model's default sampling the tiny model can end its
	// answer before 8 tokens (CI saw a stop after 3).
	setField(t, tab, "temperature", "0")
	setField(t, tab, "max-tokens", "8")
	do(t, tab, "send", chromedp.SendKeys(chromedp.ID("input"), "Hi"+kb.Enter))
	waitFor(t, tab, "the answer", `document.querySelectorAll('#log li.assistant').length === 1 && `+answerDone, 20*time.Second)
	if msgs := stored(t, tab); len(msgs) != 2 || msgs[1].Error != "" || msgs[1].Stats.Tokens != 8 {
		t.Fatalf("chat behind the prefix with the key: %+v", msgs)
	}
	for _, e := range errs.list() {
		if !strings.Contains(e, "401") {
			t.Errorf("console error: %s", e)
		}
	}
}

// exportScript presses Export JSON and catches the download in the page:
// its file name, type and text.
const exportScript = `new Promise((resolve) => {
  let blob;
  const create = URL.createObjectURL, click = HTMLAnchorElement.prototype.click;
  URL.createObjectURL = (b) => { blob = b; return create.call(URL, b); };
  HTMLAnchorElement.prototype.click = function () {
    URL.createObjectURL = create;
    HTMLAnchorElement.prototype.click = click;
    blob.text().then((text) => resolve(JSON.stringify({ name: this.download, type: blob.type, text })));
  };
  document.getElementById('export').click();
})`

// testExport checks that Export JSON downloads the stored conversation.
func testExport(t *testing.T, tab context.Context, want []storedMessage) {
	raw, err := chromedp.Run(tab, chromedp.Evaluate[string](exportScript, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	var file struct{ Name, Type, Text string }
	var data struct {
		Model    string
		Messages []storedMessage
	}
	if err := json.Unmarshal([]byte(raw), &file); err != nil {
		t.Fatalf("export: %v", err)
	}
	if err := json.Unmarshal([]byte(file.Text), &data); err != nil || !strings.HasSuffix(file.Name, ".json") || file.Type != "application/json" {
		t.Fatalf("exported %q (%s): %v", file.Name, file.Type, err)
	}
	if data.Model != "spark-tiny" || len(data.Messages) != len(want) {
		t.Fatalf("exported model %q and %d messages, want spark-tiny and %d", data.Model, len(data.Messages), len(want))
	}
	for i, m := range data.Messages {
		if m.Role != want[i].Role || m.Content != want[i].Content {
			t.Errorf("exported message %d: %s %q, want %s %q", i, m.Role, m.Content, want[i].Role, want[i].Content)
		}
	}
}

// contrastScript lists visible text whose colour against its background
// is below WCAG AA (4.5:1, 3:1 for large text); disabled controls are
// exempt, as WCAG allows.
const contrastScript = `(() => {
  const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = (c) => c.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (e) => {
    for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length < 4 || c[3] > 0) return c; }
    return rgb(getComputedStyle(document.body).backgroundColor);
  };
  const bad = [];
  for (const e of document.querySelectorAll('body *')) {
    if (!e.getClientRects().length || e.closest('[disabled], [hidden], option')) continue;
    if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const st = getComputedStyle(e);
    const a = lum(rgb(st.color)), b = lum(background(e));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(st.fontSize), large = size >= 24 || (parseInt(st.fontWeight, 10) >= 700 && size >= 18.66);
    if (ratio < (large ? 3 : 4.5)) bad.push(e.tagName + ' "' + e.textContent.trim().slice(0, 30) + '": ' + ratio.toFixed(2));
  }
  return bad;
})()`

// renderedAnswer is a stored answer with Markdown, reasoning, a tool call
// and HTML that must stay text: the tiny model writes none of these itself.
var renderedAnswer = map[string]any{
	"role": "assistant", "model": "spark-tiny", "reasoning": "The user wants a demo.",
	"content": "Here is **bold**, *italic*, `code` and a [link](https://example.com), not [this](javascript:alert(1)).\n\n" +
		"## A heading\n\n- one\n- two\n\n3. three\n4. four\n\n> quoted\n\n" +
		"```go\nfmt.Println(\"<b>hi</b>\")\n```\n\n<img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script>",
	"tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}},
	"finish": "tool_calls", "stats": map[string]any{"tokens": 57, "ttft_ms": 41, "tokens_per_s": 88.2},
}

// testRendering loads a stored conversation and checks how the answer is
// drawn: Markdown elements, code kept verbatim, no HTML from the model,
// javascript: links left as text, reasoning folded, the tool call named.
func testRendering(t *testing.T, tab context.Context, dir string) {
	conv, _ := json.Marshal(map[string]any{"settings": map[string]any{}, "messages": []any{
		map[string]any{"role": "user", "content": "Show me <b>everything</b>"}, renderedAnswer}})
	lit, _ := json.Marshal(string(conv)) // a JavaScript string literal
	eval[chromedp.Void](t, tab, fmt.Sprintf(`localStorage.setItem('siskin.chat:' + location.pathname, %s)`, lit))
	do(t, tab, "reload", chromedp.EmulateViewport(1280, 800), chromedp.Reload())
	waitFor(t, tab, "the stored answer", `document.querySelectorAll('#log li.msg').length === 2`, 10*time.Second)
	checks := map[string]string{
		"bold":              `document.querySelector('.content strong').textContent === 'bold'`,
		"italic":            `document.querySelector('.content em').textContent === 'italic'`,
		"inline code":       `document.querySelector('.content p code').textContent === 'code'`,
		"link":              `document.querySelector('.content a').href === 'https://example.com/' && document.querySelectorAll('.content a').length === 1`,
		"heading":           `document.querySelector('.content h4').textContent === 'A heading'`,
		"lists":             `document.querySelectorAll('.content ul li').length === 2 && document.querySelector('.content ol').start === 3`,
		"quote":             `document.querySelector('.content blockquote').textContent.trim() === 'quoted'`,
		"code block":        `document.querySelector('.content pre code').textContent === 'fmt.Println("<b>hi</b>")' && document.querySelector('.content pre .lang').textContent === 'go'`,
		"no model HTML":     `!document.querySelector('.content img, .content script, .content b') && window.__xss === undefined && document.querySelector('.content').textContent.includes('<script>')`,
		"user text as is":   `document.querySelector('li.user .body').textContent === 'Show me <b>everything</b>'`,
		"reasoning folded":  `!document.querySelector('details.reasoning').open && document.querySelector('details.reasoning .text').textContent === 'The user wants a demo.'`,
		"labelled controls": `[...document.querySelectorAll('input, select, textarea, button')].every((e) => e.labels && e.labels.length || e.getAttribute('aria-label') || e.textContent.trim())`,
		"tool call":         `document.querySelector('.toolcall .name').textContent === 'get_weather' && document.querySelector('.toolcall pre').textContent.includes('"city": "Paris"')`,
	}
	for what, check := range checks {
		if !eval[bool](t, tab, check) {
			t.Errorf("rendering: %s: %s is false", what, check)
		}
	}
	if bad := eval[[]string](t, tab, contrastScript); len(bad) > 0 {
		t.Errorf("text below WCAG AA contrast (light):\n%s", strings.Join(bad, "\n"))
	}
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rendering-desktop.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	dark := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}
	if _, err := chromedp.Call(tab, emulation.SetEmulatedMedia, dark); err != nil {
		t.Fatal(err)
	}
	if bad := eval[[]string](t, tab, contrastScript); len(bad) > 0 {
		t.Errorf("text below WCAG AA contrast (dark):\n%s", strings.Join(bad, "\n"))
	}
	if png, err = chromedp.Run(tab, chromedp.CaptureScreenshot()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rendering-dark.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
