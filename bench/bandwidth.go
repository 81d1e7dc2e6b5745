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
	Pattern          string // the read pattern reported (device.ReadPatterns)
}

// sink keeps the sums alive so the compiler cannot drop the reads.
var sink uint64

// MeasureBandwidth measures how fast threads goroutines can read memory:
// a buffer of size bytes (it should be much larger than the last-level
// cache; 1 GiB by default in siskin bench) is first written with a non-zero
// pattern, so every page is really mapped (a fresh zeroed allocation would
// read the shared zero page from cache), then summed read-only as 64-bit
// words, each goroutine over its own contiguous slice, in each of the
// read patterns siskin probe's figure uses too (device.ReadPatterns:
// four streams at once, or one), the loop load-bound, not add-bound. One
// unmeasured pass warms the TLB and caches, then runs timed passes of each
// pattern in turn, each giving total bytes / wall time (the slowest
// goroutine decides); the faster pattern's median is reported with its
// min and max. This is the read-only sum of STREAM-like
// probes and what decoding a token costs: every weight is read once.
func MeasureBandwidth(size int64, threads, runs int) (Bandwidth, error) {
	if threads < 1 {
		threads = 1
	}
	if runs < 1 {
		runs = 1
	}
	words := size / 8
	if words < int64(8*threads) {
		return Bandwidth{}, fmt.Errorf("bandwidth buffer of %d bytes is too small", size)
	}
	buf := make([]uint64, words)
	// Fill in parallel: a 1 GiB page-in alone takes a while on one core.
	parallel(threads, len(buf), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			buf[i] = uint64(i)*0x9e3779b97f4a7c15 | 1
		}
	})
	pass := func(p device.ReadPattern) time.Duration {
		sums := make([]uint64, threads)
		start := time.Now()
		parallelIdx(threads, len(buf), func(t, lo, hi int) { sums[t] = p.Sum(buf[lo:hi]) })
		d := time.Since(start)
		for _, s := range sums {
			sink += s
		}
		return d
	}
	pass(device.ReadPatterns[0])
	rates := make([][]float64, len(device.ReadPatterns))
	for range runs {
		for p, pat := range device.ReadPatterns {
			rates[p] = append(rates[p], float64(words*8)/pass(pat).Seconds()/1e9)
		}
	}
	for _, r := range rates {
		sort.Float64s(r)
	}
	p := device.BestPattern(rates)
	r := rates[p]
	return Bandwidth{Median: median(r), Min: r[0], Max: r[len(r)-1], Bytes: words * 8, Threads: threads, Runs: runs,
		Pattern: device.ReadPatterns[p].Name}, nil
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
