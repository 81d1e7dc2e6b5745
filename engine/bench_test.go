package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/internal/cputime"
	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/sample"
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

// BenchmarkModelStreams is what the server's 8-stream test measures,
// without HTTP: 1 or 8 concurrent requests of a 16-token prompt and 48
// new tokens (EOS ignored; greedy, or top_p 0.95 at temperature 0.8) on
// the model in $SISKIN_BENCH_MODEL (a GGUF file; skipped when unset),
// after one warm-up request. One op is one round; tok/s counts generated
// tokens over the rounds' wall time.
//
//	SISKIN_BENCH_MODEL=/tmp/q4km.gguf go test -run NONE -bench ModelStreams -benchtime 3x -cpuprofile cpu.out ./engine/
func BenchmarkModelStreams(b *testing.B) {
	path := os.Getenv("SISKIN_BENCH_MODEL")
	if path == "" {
		b.Skip("set SISKIN_BENCH_MODEL to a GGUF file")
	}
	l, err := load.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	greedy, topP := sample.Defaults(), sample.Defaults()
	greedy.Temperature = 0
	topP.Temperature, topP.TopP, topP.Seeded = 0.8, 0.95, true
	for _, sp := range []struct {
		name string
		p    sample.Params
	}{{"greedy", greedy}, {"top_p", topP}} {
		for _, conc := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/streams=%d", sp.name, conc), func(b *testing.B) {
				benchStreams(b, l.Model, sp.p, conc)
			})
		}
	}
}

func benchStreams(b *testing.B, m model.Model, sp sample.Params, conc int) {
	e := New(m, Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 512})
	defer e.Close()
	round := func(conc, tokens int) {
		var wg sync.WaitGroup
		for s := range conc {
			wg.Go(func() {
				p := prompt(16, s)
				sp := sp
				sp.Seed = uint64(s)
				sq, err := sample.NewSequence(sp, p)
				if err != nil {
					b.Error(err)
					return
				}
				ch, err := e.Submit(context.Background(), Request{Prompt: p, MaxTokens: tokens, Sampler: sq})
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
	round(1, 8)
	for b.Loop() {
		round(conc, 48)
	}
	b.ReportMetric(float64(b.N*conc*48)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkBatchedStep: what a step of continuous batching costs on the
// model in $SISKIN_BENCH_MODEL (a GGUF file; skipped when unset), on one
// thread timed by its CPU clock (a busy shared machine disturbs that far
// less than wall time): a decode step of n sequences (16-token prompts,
// one new token each) for n = 1 and 5-8, and a 64-token prefill, one
// after another in each op. It reports the milliseconds of each and
// gain-n = n*t1/tn, the aggregate tokens/s of n streams over one stream's
// if the steps were all that counted (the serving target asks 4x at 8);
// prefill-8 is the prefill's time per 8 tokens, which computes logits for
// its last token only.
//
//	SISKIN_BENCH_MODEL=/tmp/q4km.gguf go test -run NONE -bench BatchedStep -benchtime 9x ./engine/
func BenchmarkBatchedStep(b *testing.B) {
	path := os.Getenv("SISKIN_BENCH_MODEL")
	if path == "" {
		b.Skip("set SISKIN_BENCH_MODEL to a GGUF file")
	}
	l, err := load.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	m := l.Model
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	seqs := make([]model.Seq, 8)
	for i := range seqs {
		c := m.NewCache()
		c.Limit(1024) // allocated at once: no copies as it grows
		if _, err := m.ForwardBatch([]model.Seq{{Cache: c, Tokens: prompt(16, i)}}); err != nil {
			b.Fatal(err)
		}
		seqs[i] = model.Seq{Cache: c, Tokens: []int{100 + i}}
	}
	sizes := []int{1, 5, 6, 7, 8}
	times := make([][]float64, len(sizes)+1)
	for b.Loop() {
		for j, n := range sizes {
			t0 := cputime.Thread()
			if _, err := m.ForwardBatch(seqs[:n]); err != nil {
				b.Fatal(err)
			}
			times[j] = append(times[j], (cputime.Thread()-t0).Seconds()*1e3)
		}
		c := m.NewCache()
		t0 := cputime.Thread()
		if _, err := m.ForwardBatch([]model.Seq{{Cache: c, Tokens: prompt(64, 3)}}); err != nil {
			b.Fatal(err)
		}
		times[len(sizes)] = append(times[len(sizes)], (cputime.Thread()-t0).Seconds()*1e3/8)
	}
	t1 := medianOf(times[0])
	b.ReportMetric(t1, "ms-1")
	for j, n := range sizes[1:] {
		tn := medianOf(times[j+1])
		b.ReportMetric(tn, fmt.Sprintf("ms-%d", n))
		b.ReportMetric(float64(n)*t1/tn, fmt.Sprintf("gain-%d", n))
	}
	b.ReportMetric(medianOf(times[len(sizes)]), "ms-prefill-8")
}

func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
