package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/siskin-ml/siskin/engine"
)

// BenchmarkStreams measures what a client of the server sees with 1, 4
// and 8 concurrent streaming completions (64 tokens each) on the tiny
// models: time to first token, inter-token latency, and the aggregate
// generated tokens per second. One op is one round of concurrent streams.
//
//	go test -run NONE -bench Streams -benchtime 5x ./server/
func BenchmarkStreams(b *testing.B) {
	const tokens = 64
	for _, m := range [][]string{
		{"llm", "stories260K-gguf", "stories260K.gguf"},
		{"llm", "tiny", "models", "spark2_5-tiny-q4_k_m.gguf"},
		{"llm", "tiny", "models", "qwen3-tiny-q4_k_m.gguf"},
	} {
		for _, conc := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("%s/streams=%d", m[len(m)-1], conc), func(b *testing.B) {
				ts := startWith(b, setup{eng: engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 256}}, m...)
				c := ts.client()
				prompts := []string{"Once upon a time", "The little dog", "Lily wanted to", "One sunny day", "Tom and his", "The big tree", "A girl named", "There was a"}
				var ttft, itl time.Duration
				var itlN, total int
				var wall time.Duration
				for i := 0; b.Loop(); i++ {
					var mu sync.Mutex
					var wg sync.WaitGroup
					t0 := time.Now()
					for s := range conc {
						wg.Go(func() {
							p := completionParams(prompts[s%len(prompts)], tokens)
							p.Seed = openai.Int(int64(i*conc + s))
							start := time.Now()
							st := c.Completions.NewStreaming(context.Background(), p, option.WithJSONSet("ignore_eos", true), option.WithJSONSet("return_token_ids", true))
							var first, last time.Time
							n := 0
							for st.Next() {
								for _, ch := range st.Current().Choices {
									got := len(tokenIDs(b, ch.JSON.ExtraFields["token_ids"].Raw()))
									if got == 0 {
										continue
									}
									last = time.Now()
									if n == 0 {
										first = last
									}
									n += got
								}
							}
							if err := st.Err(); err != nil || n != tokens {
								b.Errorf("stream: %v, %d tokens", err, n)
								return
							}
							mu.Lock()
							ttft += first.Sub(start)
							itl += last.Sub(first)
							itlN += n - 1
							total += n
							mu.Unlock()
						})
					}
					wg.Wait()
					wall += time.Since(t0)
				}
				streams := b.N * conc
				b.ReportMetric(float64(ttft.Microseconds())/1e3/float64(streams), "ttft_ms")
				b.ReportMetric(float64(itl.Microseconds())/1e3/float64(itlN), "itl_ms")
				b.ReportMetric(float64(total)/wall.Seconds(), "tok/s")
			})
		}
	}
}
