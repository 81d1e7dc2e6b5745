package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/siskin-ml/siskin/internal/browsertest"
	"github.com/siskin-ml/siskin/internal/testdata"
)

// TestServePage loads the chat page from the serve command itself (the
// tiny Spark twin with a tiny Qwen3-TTS beside it and an API key) in
// headless Chromium: the page asks for the key, lists the model, shows
// the voice settings and answers with the API's greedy answer. The
// page's own behaviours are tested in server/web; this checks that what
// `siskin serve` builds serves them.
func TestServePage(t *testing.T) {
	const key = "page-key"
	tts := filepath.Join(t.TempDir(), "tts")
	if out, err := siskin(t, "synth", "--arch", "qwen3_tts", "--shape", "tiny", "-o", tts, "--progress", "off"); err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	out := &syncBuffer{}
	root := rootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"serve", "-m", testdata.Path(t, "llm", "tiny", "hf", "spark2_5-tiny", "bf16"),
		"--speech-model", tts, "--api-key", key, "--port", "0", "--max-model-len", "1024"})
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-exited })
	base := waitListening(t, out, exited)
	model, want := pageGreedy(t, base, key, "Hello", 12)

	tab, closeTab := chromedp.NewContext(browsertest.New(t))
	t.Cleanup(closeTab)
	wait := func(what, predicate string) {
		t.Helper()
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, out)
		}
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tab, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("load", chromedp.Navigate(base+"/"))
	wait("the key dialog", `document.getElementById('key-dialog').open`)
	run("key", chromedp.SendKeys(chromedp.ID("key-input"), key+kb.Enter))
	wait("the model list", fmt.Sprintf(`!document.getElementById('key-dialog').open && document.querySelector('#model').value === %q`, model))
	wait("the voice settings", `!document.getElementById('voice').hidden`)
	run("settings", chromedp.Evaluate[chromedp.Void](`for (const [id, v] of [['temperature', '0'], ['max-tokens', '12'], ['thinking', 'off']]) {
  const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event('input')); }`))
	run("send", chromedp.SendKeys(chromedp.ID("input"), "Hello"+kb.Enter))
	wait("the answer", `document.querySelectorAll('#log li.assistant').length === 1 && document.getElementById('stop').hidden && !document.querySelector('#log li[aria-busy]')`)
	got, err := chromedp.Run(tab, chromedp.Evaluate[string](`JSON.parse(localStorage.getItem('siskin.chat:' + location.pathname)).messages[1].content`))
	if err != nil || got != want {
		t.Fatalf("page's answer %q (%v), want the API's greedy answer %q", got, err, want)
	}
}

// pageGreedy asks the API, with the key, for the greedy answer to user
// without thinking, and returns the served LLM's name and the answer.
func pageGreedy(t *testing.T, base, key, user string, maxTokens int) (model, content string) {
	t.Helper()
	do := func(method, path string, body, v any) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %v (status %d)", method, path, err, resp.StatusCode)
		}
	}
	var models struct {
		Data []struct{ ID, Task string }
	}
	do("GET", "/v1/models", nil, &models)
	for _, m := range models.Data {
		if m.Task == "" {
			model = m.ID
		}
	}
	var chat struct {
		Choices []struct{ Message struct{ Content string } }
	}
	do("POST", "/v1/chat/completions", map[string]any{
		"model": model, "messages": []map[string]string{{"role": "user", "content": user}},
		"temperature": 0, "max_tokens": maxTokens, "chat_template_kwargs": map[string]bool{"enable_thinking": false},
	}, &chat)
	if model == "" || len(chat.Choices) != 1 {
		t.Fatalf("models %+v, choices %+v", models, chat.Choices)
	}
	return model, chat.Choices[0].Message.Content
}
