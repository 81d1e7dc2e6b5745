package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkEngine measures the scheduler loop on the tiny model: one op
// is a round of conc concurrent requests of a short prompt and 32 tokens.
//
//	go test -run NONE -bench Engine -benchtime 20x ./engine/
func BenchmarkEngine(b *testing.B) {
	m := tinySpark(b)
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("streams=%d", conc), func(b *testing.B) {
			e := New(m, Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 256})
			defer e.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var wg sync.WaitGroup
				for s := range conc {
					wg.Go(func() {
						p := prompt(12, s)
						ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: 32, Sampler: sampler(b, 0.8, uint64(i*conc+s), p)})
						if err != nil {
							b.Error(err)
							return
						}
						for range ch {
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*conc*32)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
