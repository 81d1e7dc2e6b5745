package bench

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/siskin-ml/siskin/device"
)

// Bandwidth is a memory read bandwidth measurement.
type Bandwidth struct {
	Median, Min, Max float64 // GB/s (10^9 bytes per second)
	Bytes            int64   // buffer size
	Threads, Runs    int
}

// sink keeps the sums alive so the compiler cannot drop the reads.
var sink uint64

// MeasureBandwidth measures how fast threads goroutines can read memory:
// a buffer of size bytes (it should be much larger than the last-level
// cache; 1 GiB by default in siskin bench) is first written with a non-zero
// pattern, so every page is really mapped (a fresh zeroed allocation would
// read the shared zero page from cache), then summed read-only as 64-bit
// words, each goroutine over its own contiguous slice, read as four
// streams at once (device.SumWords, which siskin probe's figure uses
// too) so the loop is load-bound, not add-bound. One
// unmeasured pass warms the TLB and caches, then runs timed passes each
// give total bytes / wall time (the slowest goroutine decides); the median
// is reported with min and max. This is the read-only sum of STREAM-like
// probes and what decoding a token costs: every weight is read once.
func MeasureBandwidth(size int64, threads, runs int) (Bandwidth, error) {
	p, err := NewProber(size, threads)
	if err != nil {
		return Bandwidth{}, err
	}
	p.Pass()
	rates := make([]float64, max(runs, 1))
	for i := range rates {
		rates[i] = p.Pass()
	}
	return p.summary(rates), nil
}

// Prober holds MeasureBandwidth's filled buffer, so that passes can be
// taken between a benchmark's repetitions.
type Prober struct {
	buf     []uint64
	threads int
}

// NewProber allocates and fills a probe buffer of size bytes for threads
// goroutines.
func NewProber(size int64, threads int) (*Prober, error) {
	threads = max(threads, 1)
	words := size / 8
	if words < int64(8*threads) {
		return nil, fmt.Errorf("bandwidth buffer of %d bytes is too small", size)
	}
	buf := make([]uint64, words)
	// Fill in parallel: a 1 GiB page-in alone takes a while on one core.
	parallel(threads, len(buf), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			buf[i] = uint64(i)*0x9e3779b97f4a7c15 | 1
		}
	})
	return &Prober{buf: buf, threads: threads}, nil
}

// Pass reads the buffer once and returns the rate in GB/s.
func (p *Prober) Pass() float64 {
	sums := make([]uint64, p.threads)
	start := time.Now()
	parallelIdx(p.threads, len(p.buf), func(t, lo, hi int) { sums[t] = device.SumWords(p.buf[lo:hi]) })
	d := time.Since(start)
	for _, s := range sums {
		sink += s
	}
	return float64(8*len(p.buf)) / d.Seconds() / 1e9
}

// summary is the median, min and max of rates (GB/s, any order).
func (p *Prober) summary(rates []float64) Bandwidth {
	s := append([]float64(nil), rates...)
	sort.Float64s(s)
	return Bandwidth{Median: median(s), Min: s[0], Max: s[len(s)-1], Bytes: 8 * int64(len(p.buf)), Threads: p.threads, Runs: len(s)}
}

// parallel splits [0, n) into threads contiguous parts.
func parallel(threads, n int, fn func(lo, hi int)) {
	parallelIdx(threads, n, func(_, lo, hi int) { fn(lo, hi) })
}

func parallelIdx(threads, n int, fn func(t, lo, hi int)) {
	var wg sync.WaitGroup
	for t := range threads {
		lo, hi := n*t/threads, n*(t+1)/threads
		wg.Go(func() { fn(t, lo, hi) })
	}
	wg.Wait()
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
