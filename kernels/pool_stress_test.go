package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// markTask records which indices it ran, so a test can check that a job
// covered [0, n) exactly once.
// Each index also spins for a while (spin loop iterations), so that the
// caller often finds workers still running and parks waiting for them.
type markTask struct {
	hits []int32
	spin int
	sink int
}

func (m *markTask) run(lo, hi int) {
	s := 0
	for i := lo; i < hi; i++ {
		m.hits[i]++
		for k := range m.spin {
			s += k ^ i
		}
	}
	if s == 1 {
		m.sink++ // never: keeps the loop
	}
}

// TestPoolStress hammers the park/wake and wait handshakes of the pool:
// several goroutines issue small jobs at once, with thread counts that
// spin (up to GOMAXPROCS) and that park at once (above it), and with
// pauses longer than the spin so workers and the waiting caller go
// through the park paths too. Every job must cover its range exactly once
// and every caller must come back: a lost wake-up shows as a hang, which
// the watchdog turns into a failure with all goroutines' stacks.
func TestPoolStress(t *testing.T) {
	defer SetThreads(0)
	jobs := 1500
	if testing.Short() {
		jobs = 500
	}
	for _, th := range []int{2, 3, runtime.GOMAXPROCS(0) + 2} {
		for _, callers := range []int{1, 8} {
			SetThreads(th)
			name := fmt.Sprintf("threads=%d/callers=%d", th, callers)
			done := make(chan struct{})
			errs := make(chan string, callers)
			go func() {
				defer close(done)
				var wg sync.WaitGroup
				for c := range callers {
					wg.Go(func() {
						m := &markTask{hits: make([]int32, 512)}
						for j := range jobs {
							n := 1 + (j*7+c)%len(m.hits)
							clear(m.hits)
							m.spin = []int{0, 10, 50, 200}[(j+c)%4]
							parallelFor(m, n, minWorkPerThread, 1)
							for i, h := range m.hits {
								if want := int32(min(1, max(0, n-i))); h != want {
									errs <- fmt.Sprintf("job %d (n=%d): index %d ran %d times", j, n, i, h)
									return
								}
							}
							if j%64 == 63 {
								time.Sleep(3 * spinFor) // let the workers park
							}
						}
					})
				}
				wg.Wait()
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				panic(fmt.Sprintf("TestPoolStress %s: the pool hangs (lost wake-up?)\n%s", name, buf))
			}
			close(errs)
			for e := range errs {
				t.Errorf("%s: %s", name, e)
			}
		}
	}
}

// nopTask does next to nothing: BenchmarkPoolDispatch measures the cost
// of handing a job to the workers and waiting for them.
type nopTask struct{ sink [64]int }

func (t *nopTask) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		t.sink[i%len(t.sink)]++
	}
}

// BenchmarkPoolDispatch: back-to-back jobs of one chunk per thread (the
// workers stay in their spin), and jobs separated by a pause longer than
// the spin (they park and are woken each time; the pause is excluded).
func BenchmarkPoolDispatch(b *testing.B) {
	defer SetThreads(0)
	for _, th := range []int{2, 4} {
		SetThreads(th)
		t := &nopTask{}
		b.Run(fmt.Sprintf("threads=%d/spin", th), func(b *testing.B) {
			for b.Loop() {
				parallelFor(t, th, minWorkPerThread, 1)
			}
		})
		b.Run(fmt.Sprintf("threads=%d/park", th), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				time.Sleep(2 * spinFor)
				b.StartTimer()
				parallelFor(t, th, minWorkPerThread, 1)
			}
		})
	}
}
