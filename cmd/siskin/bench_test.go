package main

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

func TestBenchCommandJSON(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-q4_k_m.gguf")
	out, err := siskin(t, "bench", "-m", model, "-p", "8", "-n", "4", "-r", "2", "-t", "2", "--bw-mib", "64", "--bw-runs", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res []struct {
		Test         string   `json:"test"`
		NPrompt      int      `json:"n_prompt"`
		NGen         int      `json:"n_gen"`
		Threads      int      `json:"threads"`
		TypeK        string   `json:"type_k"`
		TypeV        string   `json:"type_v"`
		Median       float64  `json:"tokens_per_second_median"`
		Bandwidth    float64  `json:"bandwidth_gbs"`
		WeightBytes  int64    `json:"weight_bytes"`
		CeilingShare *float64 `json:"ceiling_share"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res) != 2 || res[0].Test != "pp8" || res[1].Test != "tg4" || res[0].NPrompt != 8 || res[1].NGen != 4 {
		t.Fatalf("tests: %s", out)
	}
	for _, r := range res {
		if r.Threads != 2 || !(r.Median > 0) || !(r.Bandwidth > 0) || r.WeightBytes <= 0 || r.TypeK != "f16" || r.TypeV != "f16" {
			t.Errorf("%s: %+v", r.Test, r)
		}
	}
	if res[0].CeilingShare != nil || res[1].CeilingShare == nil || !(*res[1].CeilingShare > 0 && *res[1].CeilingShare < 100) {
		t.Errorf("ceiling shares: %s", out)
	}
	table, err := siskin(t, "bench", "-m", model, "-p", "0", "-n", "2", "-r", "1", "--no-bandwidth", "--kv-type", "f32")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, " tg2 |") || !strings.Contains(table, "| f32 |") {
		t.Errorf("table:\n%s", table)
	}
}

// -d runs each test after that much context, named as llama-bench does.
func TestBenchDepth(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-q4_k_m.gguf")
	out, err := siskin(t, "bench", "-m", model, "-p", "4", "-n", "2", "-d", "0,40", "-r", "1", "--no-bandwidth", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res []struct {
		Test   string `json:"test"`
		NDepth int    `json:"n_depth"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{"pp4/0", "tg2/0", "pp4 @ d40/40", "tg2 @ d40/40"}
	var got []string
	for _, r := range res {
		got = append(got, r.Test+"/"+strconv.Itoa(r.NDepth))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tests %v, want %v", got, want)
	}
	if _, err := siskin(t, "bench", "-m", model, "-d", "-1"); err == nil || !strings.Contains(err.Error(), "-d must be >= 0") {
		t.Errorf("-d -1: %v", err)
	}
}

// --cpuprofile writes one CPU profile per test, named after it.
func TestBenchCPUProfile(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-q4_k_m.gguf")
	prefix := filepath.Join(t.TempDir(), "prof")
	if _, err := siskin(t, "bench", "-m", model, "-p", "4", "-n", "2", "-d", "0,8", "-r", "1", "--no-bandwidth", "--cpuprofile", prefix); err != nil {
		t.Fatal(err)
	}
	for _, test := range []string{"pp4", "tg2", "pp4@d8", "tg2@d8"} {
		b, err := os.ReadFile(prefix + "." + test + ".pprof")
		if err != nil {
			t.Fatal(err)
		}
		// A profile is gzip-compressed protobuf.
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: not a gzip-compressed profile (%d bytes)", test, len(b))
		}
	}
}

// bench --url against siskin serve's handler on the tiny model: a test
// per concurrency, -r bursts each, every request's -n tokens counted.
func TestBenchURL(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "qwen3-tiny-q4_k_m.gguf")
	srv, cleanup, _, _, err := buildServer(serveFlags{model: model, maxNumSeqs: 4, maxRequestBytes: 1 << 20}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	out, err := siskin(t, "bench", "--url", ts.URL, "--concurrency", "1,3", "-n", "4", "-r", "2", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res []struct {
		Streams  int       `json:"streams"`
		Tokens   int       `json:"tokens_per_request"`
		Bursts   []float64 `json:"tokens_per_second"`
		VsSingle float64   `json:"vs_single_stream"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res) != 2 || res[0].Streams != 1 || res[1].Streams != 3 || res[1].Tokens != 4 || len(res[1].Bursts) != 2 || res[0].VsSingle != 1 || res[1].VsSingle <= 0 {
		t.Fatalf("results %+v", res)
	}
	if out, err := siskin(t, "bench", "--url", ts.URL, "-n", "0"); err == nil || !strings.Contains(err.Error(), "-n must give") {
		t.Errorf("-n 0: error %v\n%s", err, out)
	}
	if out, err := siskin(t, "bench", "--url", ts.URL, "-m", model); err == nil || !strings.Contains(err.Error(), "without -m or --tts") {
		t.Errorf("--url with -m: error %v\n%s", err, out)
	}
}
