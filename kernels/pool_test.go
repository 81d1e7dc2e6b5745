package kernels_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/tensor"
)

// TestMatMulNoAllocs: in the steady state a product allocates nothing,
// whether it runs on the caller or fans out to the pool.
func TestMatMulNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	defer kernels.SetThreads(0)
	rng := newRNG(30)
	for _, tierName := range kernels.Tiers() {
		restore := kernels.UseTier(tierName)
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q8_0, tensor.F16} {
			for _, th := range []int{1, 2} {
				kernels.SetThreads(th)
				w := randomMatrix(rng, typ, 256, 1024)
				p := randomMatrix(rng, typ, 253, 1024) // prepared, an incomplete last group
				kernels.Prepare(p)
				x := randomVec(rng, 5*w.Cols)
				out := make([]float32, 5*w.Rows)
				var q kernels.QuantizedActs
				for _, m := range []*tensor.Matrix{w, p} {
					for _, n := range []int{1, 4, 5} {
						kernels.MatMul(out[:n*m.Rows], m, x[:n*m.Cols], n) // warm the pools
						if a := testing.AllocsPerRun(20, func() { kernels.MatMul(out[:n*m.Rows], m, x[:n*m.Cols], n) }); a != 0 {
							t.Errorf("%s %s threads=%d n=%d prepared=%v: %v allocations per MatMul", tierName, typ, th, n, kernels.IsPrepared(m), a)
						}
						q.Quantize(typ, x[:n*m.Cols], n)
						if a := testing.AllocsPerRun(20, func() {
							q.Quantize(typ, x[:n*m.Cols], n)
							kernels.MatMulQ(out[:n*m.Rows], m, &q)
						}); a != 0 {
							t.Errorf("%s %s threads=%d n=%d prepared=%v: %v allocations per Quantize+MatMulQ", tierName, typ, th, n, kernels.IsPrepared(m), a)
						}
					}
				}
				kernels.Release(p)
			}
		}
		restore()
	}
}

// TestConcurrentCallers: MatMul called from many goroutines at once (one
// job holds the pool, the others run on their own goroutines) gives the
// same results as sequential calls.
func TestConcurrentCallers(t *testing.T) {
	defer kernels.SetThreads(0)
	kernels.SetThreads(3)
	rng := newRNG(31)
	type job struct {
		w    *tensor.Matrix
		x    []float32
		n    int
		want []float32
	}
	var jobs []job
	for i, typ := range allTypes {
		w := randomMatrix(rng, typ, 300+17*i, 512)
		n := 1 + i%5
		x := randomVec(rng, n*w.Cols)
		want := make([]float32, n*w.Rows)
		kernels.MatMul(want, w, x, n)
		jobs = append(jobs, job{w, x, n, want})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for rep := 0; rep < 5; rep++ {
				for _, j := range jobs {
					out := make([]float32, len(j.want))
					kernels.MatMul(out, j.w, j.x, j.n)
					if k := sameBits(out, j.want); k >= 0 {
						select {
						case errs <- j.w.Type.String():
						default:
						}
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s: concurrent result differs", e)
	}
}

// TestMoreThreadsThanProcs: a thread count above GOMAXPROCS (workers then
// park instead of spinning) still gives the same results.
func TestMoreThreadsThanProcs(t *testing.T) {
	defer kernels.SetThreads(0)
	rng := newRNG(32)
	w := randomMatrix(rng, tensor.Q4_0, 1000, 1024)
	x := randomVec(rng, 2*w.Cols)
	want := make([]float32, 2*w.Rows)
	kernels.SetThreads(1)
	kernels.MatMul(want, w, x, 2)
	kernels.SetThreads(4 * runtime.GOMAXPROCS(0))
	for rep := 0; rep < 20; rep++ {
		out := make([]float32, len(want))
		kernels.MatMul(out, w, x, 2)
		if k := sameBits(out, want); k >= 0 {
			t.Fatalf("rep %d: differs at %d", rep, k)
		}
	}
}
