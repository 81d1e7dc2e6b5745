package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ServeOptions controls RunServe: bursts of concurrent completions sent
// to a running OpenAI-compatible server (siskin serve, llama-server,
// vLLM), the way the serving figures in README were taken.
type ServeOptions struct {
	URL         string // the server's base, e.g. http://127.0.0.1:8080
	APIKey      string // sent as a bearer token when set
	Model       string // the model to ask for (empty: the first of GET /v1/models)
	Concurrency []int  // requests per burst, one test each
	Tokens      int    // completion tokens per request (ignore_eos asks for all of them)
	Reps        int    // bursts per test
	Client      *http.Client
}

// ServeResult is one concurrency's bursts: aggregate completion tokens a
// second of each burst (all its requests' tokens over the time from the
// first request sent to the last answer), in order.
type ServeResult struct {
	URL      string    `json:"url"`
	Model    string    `json:"model"`
	Streams  int       `json:"streams"`
	Tokens   int       `json:"tokens_per_request"`
	Bursts   []float64 `json:"tokens_per_second"`
	Median   float64   `json:"median_tokens_per_second"`
	VsSingle float64   `json:"vs_single_stream,omitempty"` // Median over the 1-stream test's, when there is one
}

// RunServe sends one untimed burst at the largest concurrency, then for
// each concurrency c, Reps bursts of c concurrent POST /v1/completions of
// Tokens tokens each (greedy, ignore_eos, a short numbered prompt per
// request: request i of every burst has the same prompt). The warm-up
// burst is as wide as the widest test so that every prompt is in the
// server's prompt cache (siskin's prefix cache, llama-server's slots)
// before the timing starts, and every timed burst measures the same
// thing: after a warm-up of one request, the first burst of eight on a
// Qwen3-1.7B Q4_K_M also prefilled the seven prompts the warm-up had not
// (32 of its 153 prompt tokens found in the prefix cache, 144 in the
// next burst), its mean time to first token 0.70 s against 0.12 s. A request
// that fails, or a server that ends one early, fails the run: the tokens
// a second would not be what was asked.
func RunServe(ctx context.Context, opt ServeOptions) ([]ServeResult, error) {
	base := strings.TrimRight(opt.URL, "/")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q: want http://host:port", opt.URL)
	}
	if opt.Tokens < 1 || opt.Reps < 1 || len(opt.Concurrency) == 0 {
		return nil, fmt.Errorf("serve bench: want tokens, repetitions and a concurrency of at least 1")
	}
	if n := slices.Min(opt.Concurrency); n < 1 {
		return nil, fmt.Errorf("--concurrency %d: want at least 1", n)
	}
	c := &serveClient{base: base, key: opt.APIKey, http: opt.Client, model: opt.Model}
	if c.http == nil {
		c.http = &http.Client{Timeout: 10 * time.Minute}
	}
	if c.model == "" {
		if err := c.firstModel(ctx); err != nil {
			return nil, err
		}
	}
	if _, err := c.burst(ctx, slices.Max(opt.Concurrency), opt.Tokens); err != nil { // warm-up
		return nil, err
	}
	var out []ServeResult
	single := 0.0
	for _, n := range opt.Concurrency {
		r := ServeResult{URL: base, Model: c.model, Streams: n, Tokens: opt.Tokens}
		for range opt.Reps {
			tps, err := c.burst(ctx, n, opt.Tokens)
			if err != nil {
				return nil, err
			}
			r.Bursts = append(r.Bursts, tps)
		}
		s := append([]float64(nil), r.Bursts...)
		sort.Float64s(s)
		r.Median = median(s)
		if n == 1 && single == 0 {
			single = r.Median
		}
		out = append(out, r)
	}
	for i := range out {
		if single > 0 {
			out[i].VsSingle = out[i].Median / single
		}
	}
	return out, nil
}

type serveClient struct {
	base, key, model string
	http             *http.Client
}

// do sends a request with a JSON body (nil: GET) and decodes a 200's JSON
// answer into v; any other status is an error quoting the answer.
func (c *serveClient) do(ctx context.Context, path string, body, v any) error {
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		method, rd = http.MethodPost, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, c.base+path, res.Status, strings.TrimSpace(string(b[:min(len(b), 300)])))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	return nil
}

func (c *serveClient) firstModel(ctx context.Context) error {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := c.do(ctx, "/v1/models", nil, &list); err != nil {
		return err
	}
	if len(list.Data) == 0 {
		return fmt.Errorf("GET %s/v1/models: no models listed", c.base)
	}
	c.model = list.Data[0].ID
	return nil
}

// burst sends n completions at once and returns their completion tokens
// over the wall time of the whole burst.
func (c *serveClient) burst(ctx context.Context, n, tokens int) (float64, error) {
	got := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			var res struct {
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			body := map[string]any{"model": c.model, "prompt": fmt.Sprintf("Once upon a time, story number %d:", i),
				"max_tokens": tokens, "temperature": 0, "ignore_eos": true}
			errs[i] = c.do(ctx, "/v1/completions", body, &res)
			got[i] = res.Usage.CompletionTokens
		})
	}
	wg.Wait()
	d := time.Since(start)
	total := 0
	for i := range n {
		if errs[i] != nil {
			return 0, errs[i]
		}
		if got[i] != tokens {
			return 0, fmt.Errorf("POST %s/v1/completions: %d completion tokens, asked %d (does the server take ignore_eos?)", c.base, got[i], tokens)
		}
		total += got[i]
	}
	return float64(total) / d.Seconds(), nil
}

// WriteServeTable prints RunServe's results as a Markdown table: each
// test's bursts in order, their median and its ratio to one stream's.
func WriteServeTable(w io.Writer, results []ServeResult) error {
	rows := [][]string{{"server", "model", "streams", "tokens", "t/s per burst", "median t/s", "x one stream"}}
	for _, r := range results {
		bursts := make([]string, len(r.Bursts))
		for i, b := range r.Bursts {
			bursts[i] = fmt.Sprintf("%.1f", b)
		}
		vs := ""
		if r.VsSingle > 0 {
			vs = fmt.Sprintf("%.2fx", r.VsSingle)
		}
		rows = append(rows, []string{r.URL, r.Model, fmt.Sprint(r.Streams), fmt.Sprint(r.Tokens),
			strings.Join(bursts, " / "), fmt.Sprintf("%.1f", r.Median), vs})
	}
	writeMarkdown(w, rows)
	return nil
}

// WriteServeJSON prints RunServe's results as a JSON array.
func WriteServeJSON(w io.Writer, results []ServeResult) error { return writeIndented(w, results) }
