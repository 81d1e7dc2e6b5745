//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// syncBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// drainStream is one streaming completion read to its end.
type drainStream struct {
	done           bool   // saw data: [DONE]
	finish         string // the last finish_reason
	completionToks int    // from the usage chunk
	err            error
}

// TestServeDrainOnSIGTERM: SIGTERM while 8 streaming completions run on
// the tiny model. Readiness turns 503 and a new request gets 503 while the
// 8 finish whole (finish_reason "length", every token, [DONE]), and serve
// returns nil within --shutdown-grace.
func TestServeDrainOnSIGTERM(t *testing.T) {
	const grace, streams, maxTokens = 60 * time.Second, 8, 96
	model := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	out := &syncBuffer{}
	root := rootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"serve", "-m", model, "--port", "0", "--max-num-seqs", "8", "--max-model-len", "1024",
		"--shutdown-grace", grace.String()})
	exited := make(chan error, 1)
	go func() { exited <- root.Execute() }()
	base := waitListening(t, out, exited)

	started := make(chan struct{}, streams)
	results := make([]drainStream, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() { results[i] = runStream(base, maxTokens, started) })
	}
	for range streams {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatalf("streams did not start:\n%s", out)
		}
	}
	t0 := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Readiness first: /health turns 503 while the streams still run.
	for code := 0; code != 503; {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Fatalf("/health after SIGTERM: %v", err)
		}
		resp.Body.Close()
		code = resp.StatusCode
		if time.Since(t0) > 5*time.Second {
			t.Fatalf("/health still %d 5 s after SIGTERM", code)
		}
	}
	if code := getStatus(t, base+"/livez"); code != 200 {
		t.Errorf("/livez while draining: %d, want 200", code)
	}
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x", "max_tokens": 2}`))
	if err != nil {
		t.Fatalf("new request while draining: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("new request while draining: %d, want 503", resp.StatusCode)
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || !r.done || r.finish != "length" || r.completionToks != maxTokens {
			t.Errorf("stream %d: [DONE] %v, finish %q, %d tokens, error %v; want [DONE], finish length and %d tokens",
				i, r.done, r.finish, r.completionToks, r.err, maxTokens)
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve returned %v after SIGTERM, want nil (exit 0)", err)
		}
		if d := time.Since(t0); d > grace {
			t.Errorf("serve took %v to stop, more than the grace %v", d, grace)
		}
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("serve did not stop within the grace period:\n%s", out)
	}
	// The drain began with the 8 streams in flight, so they were not done
	// before SIGTERM.
	m := regexp.MustCompile(`msg=draining .*in_flight=(\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no draining log line:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n < streams {
		t.Errorf("drain began with %v in flight, want >= %d:\n%s", m, streams, out)
	}
}

func waitListening(t *testing.T, out *syncBuffer, exited chan error) string {
	t.Helper()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited: %v\n%s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start:\n%s", out)
	return ""
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// runStream posts a streaming completion that ignores EOS, signals
// started at its first chunk and reads it to the end.
func runStream(base string, maxTokens int, started chan<- struct{}) (r drainStream) {
	body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": maxTokens, "ignore_eos": true,
		"temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		started <- struct{}{}
		return drainStream{err: err}
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	first := true
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if first {
			started <- struct{}{}
			first = false
		}
		if data == "[DONE]" {
			r.done = true
			continue
		}
		var c struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			r.err = err
			continue
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				r.finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			r.completionToks = c.Usage.CompletionTokens
		}
	}
	if first {
		started <- struct{}{}
	}
	if r.err == nil {
		r.err = sc.Err()
	}
	return r
}
