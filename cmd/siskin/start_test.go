package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/siskin-ml/siskin/device"
	"github.com/siskin-ml/siskin/internal/testdata"
)

// BenchmarkServeStart measures a start of siskin serve with a warm weight
// cache and page cache: from the flags to a server whose /health answers
// 200 (the listener aside). The model is the tiny Spark F32 model, or
// $SISKIN_BENCH_MODEL; the weight path is $SISKIN_BENCH_WEIGHT_PATH
// (default w4a8); $SISKIN_BENCH_CACHE keeps the weight cache between
// runs. Report it with -benchtime 5x or so: each iteration is a
// whole start.
func BenchmarkServeStart(b *testing.B) {
	model := os.Getenv("SISKIN_BENCH_MODEL")
	if model == "" {
		model = testdata.Path(b, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	}
	path := os.Getenv("SISKIN_BENCH_WEIGHT_PATH")
	if path == "" {
		path = "w4a8"
	}
	cache := os.Getenv("SISKIN_BENCH_CACHE")
	if cache == "" {
		cache = b.TempDir()
	}
	f := serveFlags{model: model, weightCache: cache, maxNumSeqs: 8, maxBatched: 256, maxRequestBytes: 1 << 20,
		toolParser: "auto", reasoningParser: "auto"}
	var err error
	f.flagLayer, err = device.FlagLayer(func(set func(name, value string)) { set("weight-path", path) })
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func() time.Duration {
		t0 := time.Now()
		srv, cleanup, _, _, err := buildServer(f, log)
		if err != nil {
			b.Fatal(err)
		}
		h := srv.Handler()
		for {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
			if rec.Code == http.StatusOK {
				break
			}
			time.Sleep(time.Millisecond)
		}
		d := time.Since(t0)
		cleanup()
		return d
	}
	first := start() // converts and writes the cache, unless it exists
	for b.Loop() {
		start()
	}
	b.ReportMetric(first.Seconds(), "first-start-s")
}
